// The tuner's full grid on the analytical objective: resnet50 on 64 ranks (dgx-h100:nodes=8),
// every configuration of colltune's own runtime (its largest space, >= 2000). Target: well
// under a second per grid. And `tune` end to end for Horovod over NCCL (the default runtime),
// also gpt2-xl on 512 ranks (target: under 2 s).
#include <benchmark/benchmark.h>

#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/strategy.hpp"
#include "colltune/tuner/tuner.hpp"

namespace {

using namespace colltune;

void BM_TunerFullGridResnet50_64Ranks(benchmark::State& state) {
  const topo::Topology topology = topo::load_topology("dgx-h100:nodes=8");
  const sim::Workload workload = sim::load_workload("resnet50");
  const tuner::SearchSpace space = tuner::make_space(tuner::RuntimeModel(topology, coll::Runtime::colltune), {});
  std::size_t configs = 0;
  for (auto _ : state) {
    // A fresh objective per grid: nothing the step model caches survives between iterations.
    tuner::SimulatedObjective objective(topology, workload, sim::Engine::analytic, coll::Runtime::colltune);
    const auto history = tuner::search(tuner::StrategyKind::grid, space, objective, {});
    benchmark::DoNotOptimize(tuner::best_of(history).step_time_us);
    configs += history.size();
  }
  state.counters["ranks"] = topology.num_ranks();
  state.counters["configs_per_grid"] = static_cast<double>(space.size());
  state.counters["configs_per_s"] = benchmark::Counter(static_cast<double>(configs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TunerFullGridResnet50_64Ranks)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// The whole `colltune tune` pipeline minus file writing (grid, baseline, tables, heatmap) for
// Horovod over NCCL.
void tune_end_to_end(benchmark::State& state, const char* spec, const char* model) {
  const topo::Topology topology = topo::load_topology(spec);
  const sim::Workload workload = sim::load_workload(model);
  for (auto _ : state) {
    tuner::SimulatedObjective objective(topology, workload, sim::Engine::analytic, coll::Runtime::horovod);
    const auto result = tuner::tune(topology, workload, objective, {});
    benchmark::DoNotOptimize(result.best.step_time_us);
  }
  state.counters["ranks"] = topology.num_ranks();
}
void BM_TuneEndToEndResnet50_64Ranks(benchmark::State& state) { tune_end_to_end(state, "dgx-h100:nodes=8", "resnet50"); }
BENCHMARK(BM_TuneEndToEndResnet50_64Ranks)->Unit(benchmark::kMillisecond)->MinTime(1.0);
void BM_TuneEndToEndGpt2xl_512Ranks(benchmark::State& state) { tune_end_to_end(state, "dgx-h100:nodes=64", "gpt2-xl"); }
BENCHMARK(BM_TuneEndToEndGpt2xl_512Ranks)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
