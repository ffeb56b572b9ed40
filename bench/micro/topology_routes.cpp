// Route queries at scale: every ring-neighbour route of a 4096-GPU fat-tree (512 hosts x 8),
// cold (a fresh topology copy per iteration, so nothing is cached) and warm (cached), against
// loading the topology itself as the baseline measured in the same run.
#include <benchmark/benchmark.h>

#include "colltune/topology/topology.hpp"

namespace {

using colltune::topo::Topology;

const char* const kSpec = "fat-tree:nodes=512,gpus=8";

const Topology& fat_tree() {
  static const Topology topology = colltune::topo::load_topology(kSpec);
  return topology;
}

double ring_routes(const Topology& t) {
  double latency = 0;
  const int p = t.num_ranks();
  for (int r = 0; r < p; ++r) latency += t.route(r, (r + 1) % p).latency_us;
  return latency;
}

void BM_LoadTopology(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(colltune::topo::load_topology(kSpec).num_links());
}

void BM_RingRoutesCold(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    Topology copy = fat_tree();  // copies start with an empty route cache
    state.ResumeTiming();
    benchmark::DoNotOptimize(ring_routes(copy));
  }
  state.counters["routes"] = fat_tree().num_ranks();
}

void BM_RingRoutesWarm(benchmark::State& state) {
  ring_routes(fat_tree());
  for (auto _ : state) benchmark::DoNotOptimize(ring_routes(fat_tree()));
}

}  // namespace

BENCHMARK(BM_LoadTopology)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingRoutesCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingRoutesWarm)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
