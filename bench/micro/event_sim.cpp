// Event simulator throughput on large schedules: a 4096-rank ring with one chunk per segment
// (2 x 4095 steps per rank, 33.5 M transfers) and a 1024-rank pipelined double binary tree, plus
// the analytical model's cost per evaluation for comparison.
//
// `events` counts the simulated events (step starts, transfer starts and ends, reduction
// arrivals), whichever way they were resolved: the event queue, or the contention-free fast path
// that resolves them without a queue and folds rotation-symmetric runs (event_sim_sweep.cpp).
// *_Cold runs load the topology and open the schedule inside the timed loop, so they include the
// route lookups a first run pays; *_Queue runs force the event queue (fast_path = false) for the
// same schedule: the baseline the fast path is measured against in the same run.
// *_ReferenceVsFast times the reference engine against the fast one on one mid-size case.
// NcclRing* run NCCL-style channels that share links: the event queue folded by rotation.
// Pricer_Copies_* and Pricer_Mirror_* time the reference pricer with its shortcuts
// (price_schedule: copies of a message moved as one, hosts whose ranks take turns run one rank,
// a schedule read alike from the other end half its ranks) against every op and rank run
// (price_schedule_op_by_op), on one opened schedule, alternated in every iteration:
// `op_by_op_over_shortcuts` is the gain.
#include <benchmark/benchmark.h>

#include <ctime>
#include <map>
#include <memory>
#include <string>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/sim/pricer.hpp"
#include "colltune/topology/topology.hpp"

namespace {

using namespace colltune;

struct Fixture {
  topo::Topology topology;
  std::unique_ptr<coll::StepSource> source;
};

coll::AlgoOptions chunked(std::size_t chunk) {
  coll::AlgoOptions options;
  options.chunk_elems = chunk;
  return options;
}

// One topology and schedule per case, opened on first use and kept for the process; the routes
// are looked up once before timing (the *_Cold cases measure them).
const Fixture& fixture(const std::string& spec, const std::string& algo, std::size_t count, std::size_t chunk = 0) {
  static std::map<std::string, std::unique_ptr<Fixture>> cache;
  auto& slot = cache[spec + "|" + algo + "|" + std::to_string(count) + "|" + std::to_string(chunk)];
  if (!slot) {
    slot = std::make_unique<Fixture>();
    slot->topology = topo::load_topology(spec);
    slot->source = coll::open_schedule(algo, slot->topology.rank_layout(), count, chunked(chunk));
    benchmark::DoNotOptimize(sim::simulate_schedule(*slot->source, slot->topology).time_us);
  }
  return *slot;
}

void report(benchmark::State& state, std::size_t events, std::size_t flows, int period, int fold = 0) {
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["flows_per_s"] = benchmark::Counter(static_cast<double>(flows), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(events) / static_cast<double>(state.iterations());
  state.counters["fast_path_period"] = period;  // 0 = event queue; see EventSimResult
  state.counters["event_fold_period"] = fold;    // > 0: the event queue folded by rotation
}

void run(benchmark::State& state, const Fixture& f, bool fast_path = true) {
  sim::EventSimOptions options;
  options.fast_path = fast_path;
  std::size_t events = 0;
  std::size_t flows = 0;
  int period = 0;
  int fold = 0;
  for (auto _ : state) {
    const sim::EventSimResult r = sim::simulate_schedule(*f.source, f.topology, options);
    events += r.events;
    flows += r.flows;
    period = r.fast_path_period;
    fold = r.event_fold_period;
    benchmark::DoNotOptimize(r.time_us);
  }
  report(state, events, flows, period, fold);
}

// Everything a first `colltune simulate --engine event` pays: topology, routes, schedule, run.
void run_cold(benchmark::State& state, const std::string& spec, const std::string& algo, std::size_t count,
              std::size_t chunk = 0) {
  std::size_t events = 0;
  std::size_t flows = 0;
  int period = 0;
  for (auto _ : state) {
    const topo::Topology t = topo::load_topology(spec);
    const auto source = coll::open_schedule(algo, t.rank_layout(), count, chunked(chunk));
    const sim::EventSimResult r = sim::simulate_schedule(*source, t);
    events += r.events;
    flows += r.flows;
    period = r.fast_path_period;
    benchmark::DoNotOptimize(r.time_us);
  }
  report(state, events, flows, period);
}

const char* const kFlat4096 = "flat:ranks=4096";
const char* const kFatTree4096 = "fat-tree:nodes=512,gpus=8,nics=8,oversub=2";
constexpr std::size_t kRingCount = 4096 * 256;  // one chunk per segment, 1 KiB segments of fp32

// NCCL-style channels (nccl_ring without NCCL's orders: one ring per local rank, 8 on a DGX)
// share each GPU's NVLink port, so the sweep refuses them and the event queue runs, folded by
// the channels' rotation symmetry to one server's ranks. 1 GiB of fp32, as the target;
// the _Queue case runs 512 ranks unfolded (fast_path = false) as the baseline in the same run.
const char* const kDgx4096 = "dgx-h100:nodes=512";
const char* const kDgx512 = "dgx-h100:nodes=64";
constexpr std::size_t kGiBCount = std::size_t{1} << 28;
void BM_EventSim_NcclRing4096_DgxH100(benchmark::State& state) { run(state, fixture(kDgx4096, "nccl_ring", kGiBCount)); }
void BM_EventSim_NcclRing512_DgxH100(benchmark::State& state) { run(state, fixture(kDgx512, "nccl_ring", kGiBCount)); }
void BM_EventSim_NcclRing512_DgxH100_Queue(benchmark::State& state) {
  run(state, fixture(kDgx512, "nccl_ring", kGiBCount), false);
}

void BM_EventSim_Ring4096_Flat(benchmark::State& state) { run(state, fixture(kFlat4096, "ring", kRingCount)); }
void BM_EventSim_Ring4096_Flat_Cold(benchmark::State& state) { run_cold(state, kFlat4096, "ring", kRingCount); }
void BM_EventSim_Ring4096_Flat_Queue(benchmark::State& state) { run(state, fixture(kFlat4096, "ring", kRingCount), false); }
void BM_EventSim_Ring4096_FatTree(benchmark::State& state) { run(state, fixture(kFatTree4096, "ring", kRingCount)); }
void BM_EventSim_Ring4096_FatTree_Cold(benchmark::State& state) { run_cold(state, kFatTree4096, "ring", kRingCount); }
// Uneven segments (count not divisible by 4096): no rotation symmetry, the unfolded fast path.
void BM_EventSim_Ring4096_Flat_Uneven(benchmark::State& state) { run(state, fixture(kFlat4096, "ring", kRingCount + 1)); }
// 1024 ranks, 4 MiB of fp32 pipelined in 64 KiB chunks: 32 chunks per tree. A rank sends to
// two children at once: contention, the event queue throughout.
void BM_EventSim_Dbtree1024_Flat(benchmark::State& state) {
  run(state, fixture("flat:ranks=1024", "dbtree", 1024 * 1024, 16 * 1024));
}
void BM_EventSim_Dbtree1024_FatTree(benchmark::State& state) {
  run(state, fixture("fat-tree:nodes=128,gpus=8,nics=8,oversub=2", "dbtree", 1024 * 1024, 16 * 1024));
}
void BM_EventSim_Dbtree1024_FatTree_Cold(benchmark::State& state) {
  run_cold(state, "fat-tree:nodes=128,gpus=8,nics=8,oversub=2", "dbtree", 1024 * 1024, 16 * 1024);
}

// The reference engine (EventEngine::reference: a full max-min solve whenever the set of flows
// changes, no sweep, no incremental solver) against the default fast engine on one mid-size
// contended case: a 128-rank double binary tree on flat, 512 KiB of fp32 pipelined in 16 KiB
// chunks. Both engines run in every iteration; the counters give each one's CPU time per run
// and their ratio, measured in the same process.
void BM_EventSim_Dbtree128_ReferenceVsFast(benchmark::State& state) {
  const Fixture& f = fixture("flat:ranks=128", "dbtree", 128 * 1024, 4 * 1024);
  sim::EventSimOptions fast;
  sim::EventSimOptions reference;
  reference.engine = sim::EventEngine::reference;
  double fast_s = 0;
  double reference_s = 0;
  auto timed = [&](const sim::EventSimOptions& options, double& seconds) {  // CPU time, as the other rows
    const std::clock_t start = std::clock();
    benchmark::DoNotOptimize(sim::simulate_schedule(*f.source, f.topology, options).time_us);
    seconds += static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  };
  for (auto _ : state) {
    timed(fast, fast_s);
    timed(reference, reference_s);
  }
  const auto runs = static_cast<double>(state.iterations());
  state.counters["fast_ms"] = 1e3 * fast_s / runs;
  state.counters["reference_ms"] = 1e3 * reference_s / runs;
  state.counters["reference_over_fast"] = reference_s / fast_s;
}

void BM_CostModel_Ring(benchmark::State& state) {
  static const topo::Topology t = topo::load_topology("dgx-h100:nodes=4");
  static const sim::CostModel model(t);
  sim::CollectiveRequest req;
  req.bytes = 64 << 20;
  const coll::Algorithm& algo = coll::find_algorithm("ring");
  for (auto _ : state) benchmark::DoNotOptimize(model.time_us(algo, req));
}

// NVLS-Tree on 16 DGX H100 hosts (its switches as ranks), 64 MiB in NCCL's 128 KiB chunks; and
// nccl_tree on 64 hosts (512 ranks), 64 MiB in 1 MiB chunks: the colltune runtime's tuning.
void pricer_copies(benchmark::State& state, const char* preset, const char* algo, bool nvls, std::size_t chunk) {
  topo::Topology t = topo::load_topology(preset);
  if (nvls) t = topo::with_nvls_switch(t);
  const sim::CostModel model(t);
  const coll::Algorithm& a = coll::find_algorithm(algo);
  const coll::AlgoOptions options = model.options_for(a, chunked(chunk));
  const auto source = coll::open_schedule(a.id, model.layout, std::size_t{16} << 20, options);
  double shortcuts_s = 0, each_s = 0;
  const auto timed = [&](auto price, double& seconds) {
    const std::clock_t start = std::clock();
    benchmark::DoNotOptimize(price(*source, model.layout, 4, model.levels));
    seconds += static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  };
  for (auto _ : state) {
    timed(sim::price_schedule, shortcuts_s);
    timed(sim::price_schedule_op_by_op, each_s);
  }
  const auto runs = static_cast<double>(state.iterations());
  state.counters["shortcuts_ms"] = 1e3 * shortcuts_s / runs;
  state.counters["op_by_op_ms"] = 1e3 * each_s / runs;
  state.counters["op_by_op_over_shortcuts"] = each_s / shortcuts_s;
}
void BM_Pricer_Copies_NvlsTree16(benchmark::State& state) {
  pricer_copies(state, "dgx-h100:nodes=16", "nccl_nvls_tree", true, 32768);
}
void BM_Pricer_Copies_NcclTree512(benchmark::State& state) {
  pricer_copies(state, "dgx-h100:nodes=64", "nccl_tree", false, 262144);
}
// dbtree on the same 512 ranks in 1 MiB chunks: no copies and no turn, but read alike from the
// other end, so its shortcut is the mirror (half the ranks run).
void BM_Pricer_Mirror_Dbtree512(benchmark::State& state) {
  pricer_copies(state, "dgx-h100:nodes=64", "dbtree", false, 262144);
}

BENCHMARK(BM_EventSim_Ring4096_Flat)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EventSim_Ring4096_Flat_Cold)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_EventSim_Ring4096_Flat_Queue)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_EventSim_Ring4096_Flat_Uneven)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_EventSim_Ring4096_FatTree)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EventSim_Ring4096_FatTree_Cold)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_EventSim_Dbtree1024_Flat)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EventSim_Dbtree1024_FatTree)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EventSim_Dbtree1024_FatTree_Cold)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_EventSim_NcclRing4096_DgxH100)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EventSim_NcclRing512_DgxH100)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EventSim_NcclRing512_DgxH100_Queue)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_EventSim_Dbtree128_ReferenceVsFast)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CostModel_Ring)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pricer_Copies_NvlsTree16)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Pricer_Copies_NcclTree512)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Pricer_Mirror_Dbtree512)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
