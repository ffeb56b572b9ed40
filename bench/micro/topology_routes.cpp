// Route queries at scale: every ring-neighbour route of a 4096-GPU fat-tree (512 hosts x 8),
// cold (a fresh topology copy per iteration, so nothing is cached) and warm (cached), against
// loading the topology itself as the baseline measured in the same run. The same cold ring
// over flat:ranks=4096 (one crossbar switch of degree 4096) and over a fat-tree with big
// leaf/spine radix shows that a query costs what its route needs, not the switches' degree.
#include <benchmark/benchmark.h>

#include "colltune/topology/topology.hpp"

namespace {

using colltune::topo::Topology;

const char* const kSpec = "fat-tree:nodes=512,gpus=8";
const char* const kFlatSpec = "flat:ranks=4096";
const char* const kWideSpec = "fat-tree:nodes=512,gpus=8,nics=8,oversub=2";

const Topology& fat_tree() {
  static const Topology topology = colltune::topo::load_topology(kSpec);
  return topology;
}

const Topology& flat() {
  static const Topology topology = colltune::topo::load_topology(kFlatSpec);
  return topology;
}

const Topology& wide_fat_tree() {
  static const Topology topology = colltune::topo::load_topology(kWideSpec);
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

// All ring-neighbour routes of `source` from a cold cache.
void ring_routes_cold(benchmark::State& state, const Topology& source) {
  for (auto _ : state) {
    state.PauseTiming();
    Topology copy = source;  // copies start with an empty route cache
    state.ResumeTiming();
    benchmark::DoNotOptimize(ring_routes(copy));
  }
  state.counters["routes"] = source.num_ranks();
}

void BM_RingRoutesCold(benchmark::State& state) { ring_routes_cold(state, fat_tree()); }

// flat:ranks=4096: every route is [uplink, downlink] through one switch of degree 4096.
void BM_FlatRingRoutesCold(benchmark::State& state) { ring_routes_cold(state, flat()); }

// The fat-tree with 8 NICs per host and 2:1 oversubscription (bigger leaf fan-out per spine).
void BM_WideFatTreeRingRoutesCold(benchmark::State& state) { ring_routes_cold(state, wide_fat_tree()); }

void BM_RingRoutesWarm(benchmark::State& state) {
  ring_routes(fat_tree());
  for (auto _ : state) benchmark::DoNotOptimize(ring_routes(fat_tree()));
}

}  // namespace

BENCHMARK(BM_LoadTopology)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingRoutesCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlatRingRoutesCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WideFatTreeRingRoutesCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingRoutesWarm)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
