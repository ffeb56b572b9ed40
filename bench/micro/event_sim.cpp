// Event simulator throughput: events per second on large schedules (a 4096-rank ring with one
// chunk per segment, a 1024-rank pipelined double binary tree), plus the analytical model's cost per
// evaluation for comparison. Schedules are built once, outside the timed loop.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include "colltune/collectives/registry.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"

namespace {

using namespace colltune;

struct Fixture {
  topo::Topology topology;
  coll::Schedule schedule;
};

// One schedule per (spec, algorithm), built on first use and kept for the process.
const Fixture& fixture(const std::string& spec, const std::string& algo, std::size_t count, std::size_t chunk = 0) {
  static std::map<std::string, std::unique_ptr<Fixture>> cache;
  auto& slot = cache[spec + "|" + algo];
  if (!slot) {
    slot = std::make_unique<Fixture>();
    slot->topology = topo::load_topology(spec);
    coll::AlgoOptions options;
    options.chunk_elems = chunk;
    slot->schedule = coll::build_schedule(algo, slot->topology.rank_layout(), count, options);
  }
  return *slot;
}

void run(benchmark::State& state, const Fixture& f) {
  std::size_t events = 0;
  std::size_t flows = 0;
  for (auto _ : state) {
    const sim::EventSimResult r = sim::simulate_schedule(f.schedule, f.topology);
    events += r.events;
    flows += r.flows;
    benchmark::DoNotOptimize(r.time_us);
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["flows_per_s"] = benchmark::Counter(static_cast<double>(flows), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(events) / static_cast<double>(state.iterations());
}

// 4096 ranks, one chunk per segment: 2 * 4095 steps per rank, 33.5 M transfers.
void BM_EventSim_Ring4096_Flat(benchmark::State& state) {
  run(state, fixture("flat:ranks=4096", "ring", 4096 * 256));
}
void BM_EventSim_Ring4096_FatTree(benchmark::State& state) {
  run(state, fixture("fat-tree:nodes=512,gpus=8,nics=8,oversub=2", "ring", 4096 * 256));
}
// 1024 ranks, 4 MiB of fp32 pipelined in 64 KiB chunks: 32 chunks per tree.
void BM_EventSim_Dbtree1024_Flat(benchmark::State& state) {
  run(state, fixture("flat:ranks=1024", "dbtree", 1024 * 1024, 16 * 1024));
}
void BM_EventSim_Dbtree1024_FatTree(benchmark::State& state) {
  run(state, fixture("fat-tree:nodes=128,gpus=8,nics=8,oversub=2", "dbtree", 1024 * 1024, 16 * 1024));
}

void BM_CostModel_Ring(benchmark::State& state) {
  static const topo::Topology t = topo::load_topology("dgx-h100:nodes=4");
  static const sim::CostModel model(t);
  sim::CollectiveRequest req;
  req.bytes = 64 << 20;
  const coll::Algorithm& algo = coll::find_algorithm("ring");
  for (auto _ : state) benchmark::DoNotOptimize(model.time_us(algo, req));
}

BENCHMARK(BM_EventSim_Ring4096_Flat)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_EventSim_Ring4096_FatTree)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_EventSim_Dbtree1024_Flat)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EventSim_Dbtree1024_FatTree)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CostModel_Ring)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
