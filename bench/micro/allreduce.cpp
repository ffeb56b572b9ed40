// Threads-transport ring allreduce against a plain memcpy of the same size.
// busbw (nccl-tests' algbw x 2(p-1)/p) is directly comparable with the memcpy rate: both say
// how many bytes per second one rank moves. Thread start-up is outside the timed region
// (manual time over `kReps` allreduces between barriers).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "colltune/bench/bench.hpp"
#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/threads.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kReps = 4;

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(16 << 20)->Arg(64 << 20)->UseRealTime();

void BM_ThreadsRingAllreduce(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const int ranks = static_cast<int>(state.range(1));
  const std::size_t count = bytes / sizeof(float);
  colltune::coll::AllreduceOptions options;  // ring, fp32, sum
  double total_s = 0;
  for (auto _ : state) {
    double seconds = 0;
    colltune::coll::run_threads(ranks, [&](colltune::coll::Communicator& comm) {
      std::vector<float> in(count, 1.0f), out(count);
      colltune::coll::allreduce(comm, in.data(), out.data(), count, options);  // warm: schedule cached
      comm.barrier(60);
      const auto t0 = Clock::now();
      for (int i = 0; i < kReps; ++i) colltune::coll::allreduce(comm, in.data(), out.data(), count, options);
      comm.barrier(60);
      if (comm.rank() == 0) seconds = std::chrono::duration<double>(Clock::now() - t0).count() / kReps;
    });
    state.SetIterationTime(seconds);
    total_s += seconds;
  }
  const double per_op = total_s / static_cast<double>(state.iterations());
  const double algbw = static_cast<double>(bytes) / per_op / 1e9;
  state.counters["algbw_GBps"] = algbw;
  state.counters["busbw_GBps"] = algbw * colltune::bench::allreduce_busbw_factor(ranks);
}
BENCHMARK(BM_ThreadsRingAllreduce)
    ->Args({1 << 20, 2})
    ->Args({16 << 20, 2})
    ->Args({64 << 20, 2})
    ->Args({64 << 20, 4})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
