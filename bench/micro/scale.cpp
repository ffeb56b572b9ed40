// Event simulation at scale (issue 24's table): 16,384 ranks on an oversubscribed fat-tree and
// 65,536 on flat, for the cases that break symmetry: a segment 4 B larger (uneven), one rank 5 us
// late, recursive halving-doubling (folded by XOR) and the double binary tree.
//
// Each case runs the whole `colltune simulate --engine event` path after the topology is loaded:
// schedule, routes, simulation. `over_symmetric` is its CPU time over the symmetric ring's
// (64 MiB, every rank on time) on the same machine, measured once in the same process, so the
// ratio survives a loaded machine. `wall_s` is a run's elapsed time: below `cpu_s` where an
// unfolded run on many ranks finds its routes ahead on a second thread. The *_Queue1024 cases run
// the old path (the event queue, fast_path = false) and the default one on 1,024 ranks in every
// iteration: `queue_over_fast` is the speed-up of the sweep by classes, measured in the same run.
// Targets (issue 24): every 16,384-rank case under 1 s, every 65,536-rank case under 5 s.
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <map>
#include <string>

#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"

namespace {

using namespace colltune;

const char* const kFatTree16k = "fat-tree:nodes=2048,oversub=4";
const char* const kFlat64k = "flat:ranks=65536";
const char* const kFatTree1k = "fat-tree:nodes=128,oversub=4";
constexpr std::size_t kCount = std::size_t{16} << 20;  // 64 MiB of fp32
constexpr int kLateRank = 5;
constexpr double kLateUs = 5.0;

const topo::Topology& topology(const std::string& spec) {
  static std::map<std::string, topo::Topology> cache;
  auto it = cache.find(spec);
  if (it == cache.end()) it = cache.emplace(spec, topo::load_topology(spec)).first;
  return it->second;
}

struct Case {
  const char* algo = "ring";
  std::size_t count = kCount;
  bool late = false;  // rank kLateRank starts kLateUs late
};

// CPU seconds of one simulation of `c` on `spec` (schedule opened inside; every thread of the
// process), and its result and elapsed seconds.
double cpu_seconds(const std::string& spec, const Case& c, bool fast_path, sim::EventSimResult* out = nullptr,
                   double* elapsed = nullptr) {
  const topo::Topology& t = topology(spec);
  const auto wall_start = std::chrono::steady_clock::now();
  const std::clock_t start = std::clock();
  const auto source = coll::open_schedule(c.algo, t.rank_layout(), c.count);
  sim::EventSimOptions options;
  options.fast_path = fast_path;
  if (c.late) {
    options.rank_start_us.assign(static_cast<std::size_t>(t.num_ranks()), 0.0);
    options.rank_start_us[kLateRank] = kLateUs;
  }
  sim::EventSimResult r = sim::simulate_schedule(*source, t, options);
  const double s = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  if (elapsed) *elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  benchmark::DoNotOptimize(r.time_us);
  if (out) *out = std::move(r);
  return s;
}

// The symmetric ring's CPU seconds on `spec`, measured once per process (after a warm-up run
// that loads the routes every case then shares).
double symmetric_seconds(const std::string& spec) {
  static std::map<std::string, double> seconds;
  auto it = seconds.find(spec);
  if (it == seconds.end()) {
    cpu_seconds(spec, Case{}, true);
    it = seconds.emplace(spec, cpu_seconds(spec, Case{}, true)).first;
  }
  return it->second;
}

void run(benchmark::State& state, const std::string& spec, const Case& c) {
  const double symmetric = symmetric_seconds(spec);
  double total = 0;
  double wall = 0;
  sim::EventSimResult r;
  for (auto _ : state) {
    double elapsed = 0;
    total += cpu_seconds(spec, c, true, &r, &elapsed);
    wall += elapsed;
  }
  const double per_run = total / static_cast<double>(state.iterations());
  state.counters["cpu_s"] = per_run;
  // Elapsed: less than the CPU time where a run finds its routes on a second thread.
  state.counters["wall_s"] = wall / static_cast<double>(state.iterations());
  state.counters["over_symmetric"] = per_run / symmetric;
  state.counters["class_period"] = r.class_period;  // > 0: the sweep by classes ran
  state.counters["max_classes"] = static_cast<double>(r.max_classes);
  state.counters["fold_period"] = r.fast_path_period > 0 ? r.fast_path_period : r.event_fold_period;
}

// The old path (event queue) against the default one on the same case, both in every iteration.
void run_against_queue(benchmark::State& state, const Case& c) {
  double fast = 0;
  double queue = 0;
  for (auto _ : state) {
    fast += cpu_seconds(kFatTree1k, c, true);
    queue += cpu_seconds(kFatTree1k, c, false);
  }
  const auto runs = static_cast<double>(state.iterations());
  state.counters["fast_s"] = fast / runs;
  state.counters["queue_s"] = queue / runs;
  state.counters["queue_over_fast"] = queue / fast;
}

#define SCALE_CASE(name, spec, ...)                                                 \
  void BM_Scale_##name(benchmark::State& state) { run(state, spec, Case{__VA_ARGS__}); } \
  BENCHMARK(BM_Scale_##name)->Unit(benchmark::kMillisecond)->Iterations(1)

SCALE_CASE(FatTree16k_Ring, kFatTree16k, "ring");
SCALE_CASE(FatTree16k_RingUneven, kFatTree16k, "ring", kCount + 1);
SCALE_CASE(FatTree16k_RingLate, kFatTree16k, "ring", kCount, true);
SCALE_CASE(FatTree16k_Rhd, kFatTree16k, "rhd");
SCALE_CASE(FatTree16k_RhdLate, kFatTree16k, "rhd", kCount, true);
SCALE_CASE(FatTree16k_Dbtree, kFatTree16k, "dbtree");
SCALE_CASE(FatTree16k_DbtreeUneven, kFatTree16k, "dbtree", kCount + 1);
SCALE_CASE(Flat64k_Ring, kFlat64k, "ring");
SCALE_CASE(Flat64k_RingUneven, kFlat64k, "ring", kCount + 1);
SCALE_CASE(Flat64k_RingLate, kFlat64k, "ring", kCount, true);
SCALE_CASE(Flat64k_Rhd, kFlat64k, "rhd");
SCALE_CASE(Flat64k_Dbtree, kFlat64k, "dbtree");
SCALE_CASE(Flat64k_DbtreeUneven, kFlat64k, "dbtree", kCount + 1);

void BM_Scale_FatTree1k_RingUneven_Queue1024(benchmark::State& state) {
  run_against_queue(state, Case{"ring", kCount + 1});
}
void BM_Scale_FatTree1k_RingLate_Queue1024(benchmark::State& state) {
  run_against_queue(state, Case{"ring", kCount, true});
}
BENCHMARK(BM_Scale_FatTree1k_RingUneven_Queue1024)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Scale_FatTree1k_RingLate_Queue1024)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
