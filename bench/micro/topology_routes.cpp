// Route queries at scale: every ring-neighbour route of a 4096-GPU fat-tree (512 hosts x 8),
// cold (a copy per iteration with paths of its own, so nothing is cached), on a copy that
// shares the paths its machine found (a what-if machine's case) and warm (cached), against
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
    // A copy shares the paths its machine found; a change, even to the same figures, gives it
    // its own, empty.
    Topology copy = source;
    copy.set_link_figures(0, copy.link(0).bandwidth_gbps, copy.link(0).latency_us);
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

// A copy of a machine whose paths are found (the bottleneck line's bandwidth what-ifs): its
// routes are built from the shared paths at its own bandwidths, without a search.
void BM_RingRoutesSharedPaths(benchmark::State& state) {
  ring_routes(fat_tree());
  for (auto _ : state) {
    state.PauseTiming();
    const Topology copy = fat_tree().with_scaled_bandwidth(colltune::topo::LinkKind::net, 2);
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
BENCHMARK(BM_FlatRingRoutesCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WideFatTreeRingRoutesCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingRoutesSharedPaths)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingRoutesWarm)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
