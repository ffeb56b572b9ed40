// fp16 compression (Horovod's Compression.fp16), its bf16 counterpart, and the fp16-wire /
// fp32-accumulate helpers.
// Each conversion is one vectorisable pass that also counts overflows as a sum reduction;
// only when that count is non-zero does a second scan look for the first index.
#include "colltune/collectives/compression.hpp"

#include <bit>
#include <cmath>
#include <string>
#include <type_traits>

#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"
#include "half_simd.hpp"

namespace colltune::coll {
namespace {

constexpr bool is_finite_bits(float x) { return (std::bit_cast<std::uint32_t>(x) & 0x7f800000u) != 0x7f800000u; }
constexpr bool is_finite_bits(double x) {
  return (std::bit_cast<std::uint64_t>(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
constexpr bool is_f16_inf(std::uint16_t h) { return (h & 0x7fffu) == 0x7c00u; }
constexpr bool is_f16_nan(std::uint16_t h) { return (h & 0x7fffu) > 0x7c00u; }

// The two 16-bit targets: how a source value narrows, and the target's infinity.
struct ToF16 {
  static constexpr std::uint16_t kInf = 0x7c00u;
  static constexpr std::uint16_t narrow(float x) { return f32_to_f16(x); }
  static constexpr std::uint16_t narrow(double x) { return f64_to_f16(x); }
  static void bulk(const float* src, std::uint16_t* dst, std::size_t n) { simd::f16c_f32_to_f16(src, dst, n); }
  static bool has_bulk() { return simd::has_f16c(); }
};
struct ToBF16 {
  static constexpr std::uint16_t kInf = 0x7f80u;
  static constexpr std::uint16_t narrow(float x) { return f32_to_bf16(x); }
  static constexpr std::uint16_t narrow(double x) { return f64_to_bf16(x); }
  static void bulk(const float* src, std::uint16_t* dst, std::size_t n) { simd::f32_to_bf16(src, dst, n); }
  static bool has_bulk() { return simd::has_avx2(); }
};

// A finite source that turned into inf (in the prescale multiply or in the rounding).
template <class T>
constexpr bool overflowed(bool src_finite, std::uint16_t h) {
  return src_finite && (h & 0x7fffu) == T::kInf;
}
template <class T>
constexpr bool is_special(std::uint16_t h) {
  return (h & 0x7fffu) >= T::kInf;
}

void check_ptrs(const void* a, const void* b, std::size_t count, const char* what) {
  if (count != 0 && (a == nullptr || b == nullptr)) {
    throw Error(std::string(what) + ": null buffer for " + std::to_string(count) + " elements");
  }
}

// Counts of one block of at most kBlock elements; 32-bit counters keep the loop vectorisable
// (a size_t accumulator next to 16-bit stores is not).
constexpr std::size_t kBlock = std::size_t{1} << 20;
struct BlockCounts {
  std::uint32_t over = 0;
  std::uint32_t nonfinite = 0;
};

template <class T, class F>
BlockCounts compress_block(const F* __restrict src, std::uint16_t* __restrict dst, std::size_t count, F prescale) {
  std::uint32_t over = 0;
  std::uint32_t nonfinite = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const F x = src[i];
    const std::uint16_t h = T::narrow(x * prescale);
    dst[i] = h;
    const bool finite = is_finite_bits(x);
    over += static_cast<std::uint32_t>(overflowed<T>(finite, h));
    nonfinite += static_cast<std::uint32_t>(!finite);
  }
  return BlockCounts{over, nonfinite};
}

// fp16 infinities and NaNs in a buffer (find_f16_overflow).
BlockCounts scan_block(const std::uint16_t* __restrict buf, std::size_t count) {
  std::uint32_t inf = 0;
  std::uint32_t nan = 0;
  for (std::size_t i = 0; i < count; ++i) {
    inf += static_cast<std::uint32_t>(is_f16_inf(buf[i]));
    nan += static_cast<std::uint32_t>(is_f16_nan(buf[i]));
  }
  return BlockCounts{inf, nan};
}

// Elements of the target format that are inf or NaN.
template <class T>
std::uint32_t count_specials(const std::uint16_t* __restrict buf, std::size_t count) {
  std::uint32_t n = 0;
  for (std::size_t i = 0; i < count; ++i) n += static_cast<std::uint32_t>(is_special<T>(buf[i]));
  return n;
}

// The same with the SIMD bulk conversion (F16C, AVX2/AVX-512 bf16): convert a cache-sized
// chunk (prescaled into a stack buffer when needed), then count over the chunk while it is
// still in L1.
template <class T>
BlockCounts compress_block_bulk(const float* src, std::uint16_t* dst, std::size_t count, float prescale) {
  constexpr std::size_t kChunk = 2048;
  float scaled[kChunk];
  BlockCounts c;
  for (std::size_t begin = 0; begin < count; begin += kChunk) {
    const std::size_t n = count - begin < kChunk ? count - begin : kChunk;
    const float* in = src + begin;
    if (prescale != 1.0f) {
      for (std::size_t i = 0; i < n; ++i) scaled[i] = in[i] * prescale;
      in = scaled;
    }
    T::bulk(in, dst + begin, n);
    // inf/NaN outputs are rare: only then tell overflows from non-finite inputs.
    if (count_specials<T>(dst + begin, n) == 0) continue;
    for (std::size_t i = 0; i < n; ++i) {
      const bool finite = is_finite_bits(src[begin + i]);
      c.over += static_cast<std::uint32_t>(overflowed<T>(finite, dst[begin + i]));
      c.nonfinite += static_cast<std::uint32_t>(!finite);
    }
  }
  return c;
}

template <class T, class F>
BlockCounts convert_block(const F* src, std::uint16_t* dst, std::size_t count, F prescale) {
  if constexpr (std::is_same_v<F, float>) {
    if (T::has_bulk()) return compress_block_bulk<T>(src, dst, count, prescale);
  }
  return compress_block<T>(src, dst, count, prescale);
}

// Steps: convert block by block, summing the counts; if any overflowed, scan once more for
// the first index.
template <class T, class F>
OverflowReport compress_impl(const F* src, std::uint16_t* dst, std::size_t count, F prescale) {
  OverflowReport r;
  for (std::size_t begin = 0; begin < count; begin += kBlock) {
    const std::size_t n = count - begin < kBlock ? count - begin : kBlock;
    const BlockCounts c = convert_block<T>(src + begin, dst + begin, n, prescale);
    r.overflowed += c.over;
    r.nonfinite_inputs += c.nonfinite;
  }
  for (std::size_t i = 0; r.overflowed != 0 && i < count; ++i) {
    if (overflowed<T>(is_finite_bits(src[i]), dst[i])) {
      r.first_index = i;
      break;
    }
  }
  return r;
}

template <class F, float (*Widen)(std::uint16_t)>
void decompress_impl(const std::uint16_t* __restrict src, F* __restrict dst, std::size_t count, F postscale) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = static_cast<F>(Widen(src[i])) * postscale;
}
constexpr float widen_f16(std::uint16_t h) { return f16_to_f32(h); }
constexpr float widen_bf16(std::uint16_t h) { return bf16_to_f32(h); }

template <class O>
void accumulate(float* __restrict inout, const std::uint16_t* __restrict in, std::size_t count, O op) {
  for (std::size_t i = 0; i < count; ++i) inout[i] = op(inout[i], f16_to_f32(in[i]));
}

template <class F>
CompressionError error_impl(const F* approx, const F* exact, std::size_t count) {
  CompressionError e;
  double sum_sq = 0.0;
  std::size_t nrel = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const auto a = static_cast<double>(approx[i]);
    const auto x = static_cast<double>(exact[i]);
    if (!std::isfinite(x)) continue;  // nothing meaningful to compare against
    ++e.count;
    if (!std::isfinite(a)) {
      ++e.nonfinite;
      continue;
    }
    const double abs_err = std::fabs(a - x);
    e.max_abs = std::fmax(e.max_abs, abs_err);
    if (x == 0.0) continue;
    const double rel = abs_err / std::fabs(x);
    if (rel > e.max_rel) {
      e.max_rel = rel;
      e.worst_index = i;
    }
    sum_sq += rel * rel;
    ++nrel;
  }
  e.rms_rel = nrel == 0 ? 0.0 : std::sqrt(sum_sq / static_cast<double>(nrel));
  return e;
}

}  // namespace

void OverflowReport::merge(const OverflowReport& chunk, std::size_t offset) {
  if (first_index == npos && chunk.first_index != npos) first_index = chunk.first_index + offset;
  overflowed += chunk.overflowed;
  nonfinite_inputs += chunk.nonfinite_inputs;
}

OverflowReport compress_f16(const float* src, std::uint16_t* dst, std::size_t count, double prescale) {
  check_ptrs(src, dst, count, "compress_f16");
  return compress_impl<ToF16>(src, dst, count, static_cast<float>(prescale));
}

OverflowReport compress_f16(const double* src, std::uint16_t* dst, std::size_t count, double prescale) {
  check_ptrs(src, dst, count, "compress_f16");
  return compress_impl<ToF16>(src, dst, count, prescale);
}

OverflowReport compress_bf16(const float* src, std::uint16_t* dst, std::size_t count, double prescale) {
  check_ptrs(src, dst, count, "compress_bf16");
  return compress_impl<ToBF16>(src, dst, count, static_cast<float>(prescale));
}

OverflowReport compress_bf16(const double* src, std::uint16_t* dst, std::size_t count, double prescale) {
  check_ptrs(src, dst, count, "compress_bf16");
  return compress_impl<ToBF16>(src, dst, count, prescale);
}

void decompress_f16(const std::uint16_t* src, float* dst, std::size_t count, double postscale) {
  check_ptrs(src, dst, count, "decompress_f16");
  if (postscale == 1.0) return f16_to_f32(src, dst, count);  // F16C when available
  decompress_impl<float, widen_f16>(src, dst, count, static_cast<float>(postscale));
}

void decompress_f16(const std::uint16_t* src, double* dst, std::size_t count, double postscale) {
  check_ptrs(src, dst, count, "decompress_f16");
  decompress_impl<double, widen_f16>(src, dst, count, postscale);
}

void decompress_bf16(const std::uint16_t* src, float* dst, std::size_t count, double postscale) {
  check_ptrs(src, dst, count, "decompress_bf16");
  if (postscale == 1.0) return bf16_to_f32(src, dst, count);  // AVX2 when available
  decompress_impl<float, widen_bf16>(src, dst, count, static_cast<float>(postscale));
}

void decompress_bf16(const std::uint16_t* src, double* dst, std::size_t count, double postscale) {
  check_ptrs(src, dst, count, "decompress_bf16");
  decompress_impl<double, widen_bf16>(src, dst, count, postscale);
}

OverflowReport find_f16_overflow(const std::uint16_t* buf, std::size_t count) {
  check_ptrs(buf, buf, count, "find_f16_overflow");
  OverflowReport r;
  for (std::size_t begin = 0; begin < count; begin += kBlock) {
    const std::size_t n = count - begin < kBlock ? count - begin : kBlock;
    const BlockCounts c = scan_block(buf + begin, n);
    r.overflowed += c.over;
    r.nonfinite_inputs += c.nonfinite;
  }
  for (std::size_t i = 0; r.overflowed != 0 && i < count; ++i) {
    if (is_f16_inf(buf[i])) {
      r.first_index = i;
      break;
    }
  }
  return r;
}

OverflowReport encode_f16_wire(const float* src, std::uint16_t* dst, std::size_t count) {
  check_ptrs(src, dst, count, "encode_f16_wire");
  return compress_impl<ToF16>(src, dst, count, 1.0f);
}

void reduce_f16_into_f32(float* inout, const std::uint16_t* in, std::size_t count) {
  reduce_f16_into_f32(ReduceOp::sum, inout, in, count);
}

void reduce_f16_into_f32(ReduceOp op, float* inout, const std::uint16_t* in, std::size_t count) {
  check_ptrs(inout, in, count, "reduce_f16_into_f32");
  if (static_cast<int>(op) < 0 || static_cast<int>(op) > static_cast<int>(ReduceOp::prod)) {
    throw Error("reduce_f16_into_f32: unknown reduce op value " + std::to_string(static_cast<int>(op)));
  }
  if (simd::has_f16c()) return simd::f16c_reduce_f16_into_f32(op, inout, in, count);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return accumulate(inout, in, count, [](float a, float b) { return a + b; });
    case ReduceOp::prod: return accumulate(inout, in, count, [](float a, float b) { return a * b; });
    case ReduceOp::min: return accumulate(inout, in, count, [](float a, float b) { return b < a ? b : a; });
    case ReduceOp::max: return accumulate(inout, in, count, [](float a, float b) { return a < b ? b : a; });
  }
  throw Error("reduce_f16_into_f32: unknown reduce op value " + std::to_string(static_cast<int>(op)));
}

CompressionError compression_error(const float* approx, const float* exact, std::size_t count) {
  check_ptrs(approx, exact, count, "compression_error");
  return error_impl(approx, exact, count);
}

CompressionError compression_error(const double* approx, const double* exact, std::size_t count) {
  check_ptrs(approx, exact, count, "compression_error");
  return error_impl(approx, exact, count);
}

}  // namespace colltune::coll
