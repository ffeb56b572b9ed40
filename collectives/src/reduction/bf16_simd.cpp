// bf16 kernels (see half_simd.hpp): AVX2 integer rounding, the AVX-512 BF16 conversion
// instruction, and the portable loops they fall back to. Every loop finishes its tail (and the
// AVX-512 path any step holding a subnormal) with the scalar element math of element_math.hpp.
//
// AVX2 reduction without unpacking: a 32-bit lane of a bf16 register holds two elements, the
// even one in its low half and the odd one in its high half. Shifting the lane left by 16 gives
// the even element as an fp32, masking the low half off gives the odd one; each is combined in
// fp32 and rounded, and a 16-bit blend puts the two rounded halves back into one register.
//
// Rounding of a lane u (fp32 bits), as f32_to_bf16 in half.hpp: u + 0x7fff + (bit 16 of u),
// whose top half is the bf16 rounded to nearest even (a carry into the exponent is the correct
// rounding up, up to inf); a NaN gets no increment and its quiet bit set instead. NaNs are
// rare, so a step first tests its 16 lanes and skips the NaN handling when there is none.
#include <cstddef>
#include <cstdint>

#include "colltune/collectives/element_math.hpp"
#include "half_simd.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define COLLTUNE_X86_SIMD 1
#endif

namespace colltune::coll::simd {
namespace {

void scalar_reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                        std::size_t count) {
  element::with_op(op, [&]<class O>() {
    for (std::size_t i = 0; i < count; ++i) out[i] = element::combine<element::BF16, O>(a[i], b[i]);
  });
}

void scalar_f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = coll::f32_to_bf16(src[i]);
}

#ifdef COLLTUNE_X86_SIMD
#define COLLTUNE_AVX2 __attribute__((target("avx2")))
#define COLLTUNE_AVX512_BF16 __attribute__((target("avx2,avx512f,avx512dq,avx512bf16")))

// ---- AVX2 -----------------------------------------------------------------------------------

// The lane's fp32 bits plus its rounding increment: the top 16 bits are the bf16 result.
COLLTUNE_AVX2 __m256i round_to_top_half(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i increment = _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  const __m256i rounded = _mm256_add_epi32(u, _mm256_andnot_si256(nan, increment));
  return _mm256_or_si256(rounded, _mm256_and_si256(nan, _mm256_set1_epi32(0x00400000)));
}

// The same for lanes known to hold no NaN.
COLLTUNE_AVX2 __m256i round_finite_to_top_half(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
}

// True when no lane of x or y is a NaN.
COLLTUNE_AVX2 bool no_nan(__m256 x, __m256 y) {
  const __m256 unordered = _mm256_cmp_ps(x, y, _CMP_UNORD_Q);
  return _mm256_testz_ps(unordered, unordered) != 0;
}

// min(b, a) / max(b, a) select b only when strictly smaller / larger: element_math's Min/Max,
// NaN cases included (the second operand is returned when either is NaN).
template <ReduceOp Op>
COLLTUNE_AVX2 __m256 vector_op(__m256 a, __m256 b) {
  if constexpr (Op == ReduceOp::prod) {
    return _mm256_mul_ps(a, b);
  } else if constexpr (Op == ReduceOp::min) {
    return _mm256_min_ps(b, a);
  } else if constexpr (Op == ReduceOp::max) {
    return _mm256_max_ps(b, a);
  } else {
    return _mm256_add_ps(a, b);
  }
}

COLLTUNE_AVX2 __m256 even_half(__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
COLLTUNE_AVX2 __m256 odd_half(__m256i v) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

template <ReduceOp Op>
COLLTUNE_AVX2 __m256i reduce16(__m256i a, __m256i b) {
  const __m256 even = vector_op<Op>(even_half(a), even_half(b));
  const __m256 odd = vector_op<Op>(odd_half(a), odd_half(b));
  const bool finite = no_nan(even, odd);
  const __m256i e = finite ? round_finite_to_top_half(even) : round_to_top_half(even);
  const __m256i o = finite ? round_finite_to_top_half(odd) : round_to_top_half(odd);
  return _mm256_blend_epi16(_mm256_srli_epi32(e, 16), o, 0xAA);  // odd words from `o`
}

template <ReduceOp Op>
COLLTUNE_AVX2 void avx2_reduce_loop(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                                    std::size_t count) {
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), reduce16<Op>(va, vb));
  }
  scalar_reduce_bf16(Op, out + i, a + i, b + i, count - i);
}

// ---- AVX-512 BF16 ---------------------------------------------------------------------------

// GCC 12's AVX-512 headers start intrinsics from a deliberately undefined register, which
// -Wmaybe-uninitialized reports at every use; nothing here reads an undefined value.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Lanes holding a subnormal, which vcvtne2ps2bf16 would flush to zero.
COLLTUNE_AVX512_BF16 __mmask16 subnormal_lanes(__m512 x) { return _mm512_fpclass_ps_mask(x, 0x20); }

// 16 bf16 widened to fp32.
COLLTUNE_AVX512_BF16 __m512 widen16(const std::uint16_t* p) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

template <ReduceOp Op>
COLLTUNE_AVX512_BF16 __m512 vector_op512(__m512 a, __m512 b) {
  if constexpr (Op == ReduceOp::prod) {
    return _mm512_mul_ps(a, b);
  } else if constexpr (Op == ReduceOp::min) {
    return _mm512_min_ps(b, a);
  } else if constexpr (Op == ReduceOp::max) {
    return _mm512_max_ps(b, a);
  } else {
    return _mm512_add_ps(a, b);
  }
}

// Rounds 32 fp32 values (lo = elements 0-15, hi = 16-31) to bf16 at `dst`; false, with nothing
// written, when one of them is subnormal.
COLLTUNE_AVX512_BF16 bool store32_bf16(std::uint16_t* dst, __m512 lo, __m512 hi) {
  if ((subnormal_lanes(lo) | subnormal_lanes(hi)) != 0) return false;
  const __m512bh packed = _mm512_cvtne2ps_pbh(hi, lo);
  _mm512_storeu_si512(dst, (__m512i)packed);  // a bit-pattern cast between vector types
  return true;
}

template <ReduceOp Op>
COLLTUNE_AVX512_BF16 void avx512_reduce_loop(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                                             std::size_t count) {
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m512 lo = vector_op512<Op>(widen16(a + i), widen16(b + i));
    const __m512 hi = vector_op512<Op>(widen16(a + i + 16), widen16(b + i + 16));
    if (!store32_bf16(out + i, lo, hi)) scalar_reduce_bf16(Op, out + i, a + i, b + i, 32);
  }
  scalar_reduce_bf16(Op, out + i, a + i, b + i, count - i);
}

#pragma GCC diagnostic pop
#endif

// Calls f.template operator()<Op>() with the op as a template argument (avg as sum), so the
// loops have no switch inside.
template <class F>
void with_op_constant(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::prod: return f.template operator()<ReduceOp::prod>();
    case ReduceOp::min: return f.template operator()<ReduceOp::min>();
    case ReduceOp::max: return f.template operator()<ReduceOp::max>();
    default: return f.template operator()<ReduceOp::sum>();
  }
}

}  // namespace

#ifdef COLLTUNE_X86_SIMD

bool has_avx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}

bool has_avx512_bf16() {
  static const bool have = has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                           __builtin_cpu_supports("avx512bf16");
  return have;
}

void avx2_reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                      std::size_t count) {
  with_op_constant(op, [&]<ReduceOp Op>() { avx2_reduce_loop<Op>(out, a, b, count); });
}

COLLTUNE_AVX2 void avx2_f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count) {
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(src + i);
    const __m256 x1 = _mm256_loadu_ps(src + i + 8);
    const bool finite = no_nan(x0, x1);
    const __m256i lo = _mm256_srli_epi32(finite ? round_finite_to_top_half(x0) : round_to_top_half(x0), 16);
    const __m256i hi = _mm256_srli_epi32(finite ? round_finite_to_top_half(x1) : round_to_top_half(x1), 16);
    // packus works per 128-bit lane (lo0 hi0 lo1 hi1); the permute restores element order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
  }
  scalar_f32_to_bf16(src + i, dst + i, count - i);
}

COLLTUNE_AVX2 void avx2_bf16_to_f32(const std::uint16_t* src, float* dst, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
  }
  for (; i < count; ++i) dst[i] = coll::bf16_to_f32(src[i]);
}

void avx512_reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                        std::size_t count) {
  with_op_constant(op, [&]<ReduceOp Op>() { avx512_reduce_loop<Op>(out, a, b, count); });
}

COLLTUNE_AVX512_BF16 void avx512_f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count) {
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    if (!store32_bf16(dst + i, _mm512_loadu_ps(src + i), _mm512_loadu_ps(src + i + 16))) {
      scalar_f32_to_bf16(src + i, dst + i, 32);
    }
  }
  scalar_f32_to_bf16(src + i, dst + i, count - i);
}

#else  // no x86 SIMD: the has_*() are false and every kernel is the portable loop

bool has_avx2() { return false; }
bool has_avx512_bf16() { return false; }

void avx2_reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                      std::size_t count) {
  scalar_reduce_bf16(op, out, a, b, count);
}
void avx2_f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count) { scalar_f32_to_bf16(src, dst, count); }
void avx2_bf16_to_f32(const std::uint16_t* src, float* dst, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = coll::bf16_to_f32(src[i]);
}
void avx512_reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                        std::size_t count) {
  scalar_reduce_bf16(op, out, a, b, count);
}
void avx512_f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count) {
  scalar_f32_to_bf16(src, dst, count);
}

#endif

void reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b, std::size_t count) {
  if (has_avx512_bf16()) return avx512_reduce_bf16(op, out, a, b, count);
  if (has_avx2()) return avx2_reduce_bf16(op, out, a, b, count);
  scalar_reduce_bf16(op, out, a, b, count);
}

void f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count) {
  if (has_avx512_bf16()) return avx512_f32_to_bf16(src, dst, count);
  if (has_avx2()) return avx2_f32_to_bf16(src, dst, count);
  scalar_f32_to_bf16(src, dst, count);
}

void bf16_to_f32(const std::uint16_t* src, float* dst, std::size_t count) {
  if (has_avx2()) return avx2_bf16_to_f32(src, dst, count);
  for (std::size_t i = 0; i < count; ++i) dst[i] = coll::bf16_to_f32(src[i]);
}

}  // namespace colltune::coll::simd
