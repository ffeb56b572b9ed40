// The tuner's full grid on the analytical objective: resnet50 on 64 ranks (dgx-h100:nodes=8),
// every configuration of the default space (>= 2000). Target: well under a second per grid.
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
  const tuner::SearchSpace space = tuner::make_space({});
  std::size_t configs = 0;
  for (auto _ : state) {
    // A fresh objective per grid: nothing the step model caches survives between iterations.
    tuner::SimulatedObjective objective(topology, workload, sim::Engine::analytic);
    const auto history = tuner::search(tuner::StrategyKind::grid, space, objective, {});
    benchmark::DoNotOptimize(tuner::best_of(history).step_time_us);
    configs += history.size();
  }
  state.counters["ranks"] = topology.num_ranks();
  state.counters["configs_per_grid"] = static_cast<double>(space.size());
  state.counters["configs_per_s"] = benchmark::Counter(static_cast<double>(configs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TunerFullGridResnet50_64Ranks)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// The whole `colltune tune` pipeline minus file writing: grid, baseline, tables, heatmap.
void BM_TuneEndToEndResnet50_64Ranks(benchmark::State& state) {
  const topo::Topology topology = topo::load_topology("dgx-h100:nodes=8");
  const sim::Workload workload = sim::load_workload("resnet50");
  for (auto _ : state) {
    tuner::SimulatedObjective objective(topology, workload, sim::Engine::analytic);
    const auto result = tuner::tune(topology, workload, objective, {});
    benchmark::DoNotOptimize(result.best.step_time_us);
  }
}
BENCHMARK(BM_TuneEndToEndResnet50_64Ranks)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
