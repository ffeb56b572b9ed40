// The topology commands at the rank limit (limits::kMaxTopologyRanks, 131,072 ranks) against the
// same commands on a 1,024-node machine, timed in one run so that the ratio is what the machine's
// load leaves alone: `topo show` (the summary with its slowest-route search), `topo validate` and
// `simulate --algo ring` (the analytic cost model), each from the preset spec as the CLI runs it.
// Linear scaling is a ratio near the ratio of the machines' sizes (16 for the fat-trees); the
// search of `topo show` is budgeted (report.hpp), so its ratio stays near the build's.
//   fat-tree:nodes=1024 (8,192 GPUs)   vs  fat-tree:nodes=16384 (131,072 GPUs)
//   torus:dims=32x32 (1,024 GPUs)      vs  torus:dims=512x256  (131,072 GPUs)
// BM_SlowestRoute* time the slowest-route search itself, new (budgeted) against old (256 sources
// at any size, what `topo show` ran before) in the same run, on machines where the old one
// still finishes: its counter `ratio` is old / new.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <limits>
#include <string>

#include "colltune/collectives/registry.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/topology/report.hpp"
#include "colltune/topology/topology.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace topo = colltune::topo;

double show(const std::string& spec) {
  const topo::Topology t = topo::load_topology(spec);
  return static_cast<double>(topo::summary_text(t).size());
}

double validate(const std::string& spec) {
  const topo::Topology t = topo::load_topology(spec);  // load_topology validates, as `topo validate`
  return t.num_ranks();
}

double simulate_ring(const std::string& spec) {
  const topo::Topology t = topo::load_topology(spec);
  const colltune::sim::CostModel model(t);
  colltune::sim::CollectiveRequest request;
  request.algorithm = "ring";
  request.bytes = std::size_t{1} << 20;
  request.elem_size = 4;
  return model.time_us(colltune::coll::find_algorithm("ring"), request);
}

double seconds(double (*command)(const std::string&), const std::string& spec) {
  const auto start = Clock::now();
  benchmark::DoNotOptimize(command(spec));
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One iteration runs the command on both machines; the counters are the two times and their ratio.
void scale(benchmark::State& state, double (*command)(const std::string&), const char* small, const char* large) {
  double small_s = 0, large_s = 0;
  for (auto _ : state) {
    small_s = seconds(command, small);
    large_s = seconds(command, large);
    state.SetIterationTime(large_s);
  }
  state.counters["small_s"] = small_s;
  state.counters["large_s"] = large_s;
  state.counters["ratio"] = large_s / small_s;
}

// The search alone, on an already loaded machine: old (unbudgeted) against new.
void slowest_route_old_vs_new(benchmark::State& state, const char* spec) {
  const topo::Topology t = topo::load_topology(spec);
  double old_s = 0, new_s = 0;
  int old_sources = 0, new_sources = 0;
  for (auto _ : state) {
    auto start = Clock::now();
    old_sources = topo::slowest_route(t, 256, std::numeric_limits<std::size_t>::max()).sources_searched;
    old_s = std::chrono::duration<double>(Clock::now() - start).count();
    start = Clock::now();
    new_sources = topo::slowest_route(t).sources_searched;
    new_s = std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(new_s);
  }
  state.counters["old_s"] = old_s;
  state.counters["new_s"] = new_s;
  state.counters["old_sources"] = old_sources;
  state.counters["new_sources"] = new_sources;
  state.counters["ratio"] = old_s / new_s;
}

constexpr const char* kFatTreeSmall = "fat-tree:nodes=1024";
constexpr const char* kFatTreeLarge = "fat-tree:nodes=16384";
constexpr const char* kTorusSmall = "torus:dims=32x32";
constexpr const char* kTorusLarge = "torus:dims=512x256";

void BM_SlowestRouteFatTree(benchmark::State& s) { slowest_route_old_vs_new(s, "fat-tree:nodes=1024"); }
void BM_SlowestRouteTorus(benchmark::State& s) { slowest_route_old_vs_new(s, "torus:dims=128x128"); }
void BM_ShowFatTree(benchmark::State& s) { scale(s, show, kFatTreeSmall, kFatTreeLarge); }
void BM_ValidateFatTree(benchmark::State& s) { scale(s, validate, kFatTreeSmall, kFatTreeLarge); }
void BM_SimulateFatTree(benchmark::State& s) { scale(s, simulate_ring, kFatTreeSmall, kFatTreeLarge); }
void BM_ShowTorus(benchmark::State& s) { scale(s, show, kTorusSmall, kTorusLarge); }
void BM_ValidateTorus(benchmark::State& s) { scale(s, validate, kTorusSmall, kTorusLarge); }
void BM_SimulateTorus(benchmark::State& s) { scale(s, simulate_ring, kTorusSmall, kTorusLarge); }

}  // namespace

BENCHMARK(BM_SlowestRouteFatTree)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_SlowestRouteTorus)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_ShowFatTree)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_ValidateFatTree)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_SimulateFatTree)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_ShowTorus)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_ValidateTorus)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_SimulateTorus)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_MAIN();
