// Reducer and fp16/bf16 conversion throughput against memcpy of the same bytes.
// Bytes per second count the reduced (destination) buffer once, so "fp32 sum reduce at X GB/s
// vs memcpy at Y GB/s" compares the cost of combining a buffer with the cost of copying it.
// The *_NoVec variants run the same loop with GCC's vectoriser off, to show what vectorising buys.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "colltune/collectives/compression.hpp"
#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"
#include "half_simd.hpp"

namespace {

using colltune::coll::DType;
using colltune::coll::ReduceOp;

std::size_t elems(const benchmark::State& state) { return static_cast<std::size_t>(state.range(0)); }

void set_bytes(benchmark::State& state, std::size_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
}

void BM_Memcpy_f32(benchmark::State& state) {
  const std::size_t n = elems(state);
  std::vector<float> src(n, 1.0f), dst(n, 0.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n * sizeof(float));
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * sizeof(float));
}

template <DType T, class E>
void BM_Reduce(benchmark::State& state, E one) {
  const std::size_t n = elems(state);
  std::vector<E> a(n, one), b(n, one);
  for (auto _ : state) {
    colltune::coll::reduce(T, ReduceOp::sum, a.data(), b.data(), n);
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * sizeof(E));
}

void BM_Reduce_f32_sum(benchmark::State& s) { BM_Reduce<DType::f32>(s, 1.0f); }
void BM_Reduce_f64_sum(benchmark::State& s) { BM_Reduce<DType::f64>(s, 1.0); }
void BM_Reduce_i32_sum(benchmark::State& s) { BM_Reduce<DType::i32>(s, std::int32_t{1}); }
// Values 0 keep fp16/bf16 sums finite however many iterations run.
void BM_Reduce_f16_sum(benchmark::State& s) { BM_Reduce<DType::f16>(s, std::uint16_t{0}); }
void BM_Reduce_bf16_sum(benchmark::State& s) { BM_Reduce<DType::bf16>(s, std::uint16_t{0}); }

// The bf16 kernels use the best instruction set the CPU has (AVX-512 BF16, else AVX2); these
// run the AVX2 integer-rounding kernel explicitly, for CPUs without AVX-512 BF16.
void BM_Reduce_bf16_sum_AVX2(benchmark::State& state) {
  if (!colltune::coll::simd::has_avx2()) return state.SkipWithError("no AVX2 on this CPU");
  const std::size_t n = elems(state);
  std::vector<std::uint16_t> a(n, 0), b(n, 0);
  for (auto _ : state) {
    colltune::coll::simd::avx2_reduce_bf16(ReduceOp::sum, a.data(), a.data(), b.data(), n);
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * sizeof(std::uint16_t));
}

#if defined(__GNUC__) && !defined(__clang__)
[[gnu::optimize("no-tree-vectorize"), gnu::noinline]] void f16_sum_novec(std::uint16_t* __restrict a,
                                                                        const std::uint16_t* __restrict b,
                                                                        std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = colltune::coll::f32_to_f16(colltune::coll::f16_to_f32(a[i]) + colltune::coll::f16_to_f32(b[i]));
  }
}
void BM_Reduce_f16_sum_NoVec(benchmark::State& state) {
  const std::size_t n = elems(state);
  std::vector<std::uint16_t> a(n, 0), b(n, 0);
  for (auto _ : state) {
    f16_sum_novec(a.data(), b.data(), n);
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * sizeof(std::uint16_t));
}
BENCHMARK(BM_Reduce_f16_sum_NoVec)->Arg(1 << 13)->Arg(1 << 24);
#endif

// One pass of `op(src, dst, n)` per iteration over n elements; bytes count the fp32 side once
// (read for f32 -> f16/bf16, written for f16 -> f32, accumulated for f16 into f32).
template <class Src, class Dst, class Op>
void BM_Elementwise(benchmark::State& state, Src init, Op op) {
  const std::size_t n = elems(state);
  std::vector<Src> src(n, init);
  std::vector<Dst> dst(n);
  for (auto _ : state) {
    op(src.data(), dst.data(), n);
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * sizeof(float));
}

void BM_Convert_f32_to_f16(benchmark::State& s) {
  BM_Elementwise<float, std::uint16_t>(s, 1.5f, [](const float* a, std::uint16_t* b, std::size_t n) {
    colltune::coll::f32_to_f16(a, b, n);
  });
}
void BM_Convert_f16_to_f32(benchmark::State& s) {
  BM_Elementwise<std::uint16_t, float>(s, std::uint16_t{0x3e00}, [](const std::uint16_t* a, float* b, std::size_t n) {
    colltune::coll::f16_to_f32(a, b, n);
  });
}
void BM_Convert_f32_to_bf16(benchmark::State& s) {
  BM_Elementwise<float, std::uint16_t>(s, 1.5f, [](const float* a, std::uint16_t* b, std::size_t n) {
    colltune::coll::f32_to_bf16(a, b, n);
  });
}
void BM_Convert_f32_to_bf16_AVX2(benchmark::State& s) {
  if (!colltune::coll::simd::has_avx2()) return s.SkipWithError("no AVX2 on this CPU");
  BM_Elementwise<float, std::uint16_t>(s, 1.5f, [](const float* a, std::uint16_t* b, std::size_t n) {
    colltune::coll::simd::avx2_f32_to_bf16(a, b, n);
  });
}
void BM_Compress_f16_with_overflow_check(benchmark::State& s) {
  BM_Elementwise<float, std::uint16_t>(s, 1.5f, [](const float* a, std::uint16_t* b, std::size_t n) {
    benchmark::DoNotOptimize(colltune::coll::compress_f16(a, b, n));
  });
}
// The fp32 accumulator starts at 0 and the fp16 inputs are 0, so it stays finite.
void BM_Reduce_f16_into_f32(benchmark::State& s) {
  BM_Elementwise<std::uint16_t, float>(s, std::uint16_t{0}, [](const std::uint16_t* in, float* acc, std::size_t n) {
    colltune::coll::reduce_f16_into_f32(acc, in, n);
  });
}

// 8 Ki elements (32 KiB of fp32: in L1/L2) and 16 Mi elements (64 MiB of fp32: memory bound).
#define COLLTUNE_SIZES ->Arg(1 << 13)->Arg(1 << 24)
BENCHMARK(BM_Memcpy_f32) COLLTUNE_SIZES;
BENCHMARK(BM_Reduce_f32_sum) COLLTUNE_SIZES;
BENCHMARK(BM_Reduce_f64_sum) COLLTUNE_SIZES;
BENCHMARK(BM_Reduce_i32_sum) COLLTUNE_SIZES;
BENCHMARK(BM_Reduce_f16_sum) COLLTUNE_SIZES;
BENCHMARK(BM_Reduce_bf16_sum) COLLTUNE_SIZES;
BENCHMARK(BM_Reduce_bf16_sum_AVX2) COLLTUNE_SIZES;
BENCHMARK(BM_Convert_f32_to_f16) COLLTUNE_SIZES;
BENCHMARK(BM_Convert_f16_to_f32) COLLTUNE_SIZES;
BENCHMARK(BM_Convert_f32_to_bf16) COLLTUNE_SIZES;
BENCHMARK(BM_Convert_f32_to_bf16_AVX2) COLLTUNE_SIZES;
BENCHMARK(BM_Compress_f16_with_overflow_check) COLLTUNE_SIZES;
BENCHMARK(BM_Reduce_f16_into_f32) COLLTUNE_SIZES;

}  // namespace

BENCHMARK_MAIN();
