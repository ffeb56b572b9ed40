// F16C kernels (see half_simd.hpp). Each loop handles 8 elements per iteration with
// 256-bit AVX registers and finishes the tail with the portable scalar conversions.
#include "half_simd.hpp"

#include "colltune/collectives/half.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define COLLTUNE_X86_F16C 1
#endif

namespace colltune::coll::simd {
namespace {

float scalar_op(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::prod: return a * b;
    case ReduceOp::min: return b < a ? b : a;
    case ReduceOp::max: return a < b ? b : a;
    default: return a + b;
  }
}

#ifdef COLLTUNE_X86_F16C
#define COLLTUNE_F16C_TARGET __attribute__((target("avx,f16c")))

// min(b, a) / max(b, a) select b only when strictly smaller / larger: the portable Min/Max.
COLLTUNE_F16C_TARGET __m256 vector_op(ReduceOp op, __m256 a, __m256 b) {
  switch (op) {
    case ReduceOp::prod: return _mm256_mul_ps(a, b);
    case ReduceOp::min: return _mm256_min_ps(b, a);
    case ReduceOp::max: return _mm256_max_ps(b, a);
    default: return _mm256_add_ps(a, b);
  }
}

COLLTUNE_F16C_TARGET __m256 load8_f16(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
COLLTUNE_F16C_TARGET void store8_f16(std::uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
#endif

}  // namespace

#ifdef COLLTUNE_X86_F16C

// CPUID leaf 1 (AVX, F16C, OSXSAVE) and XCR0 (the OS saves the YMM registers), read directly:
// clang's __builtin_cpu_supports knows no "f16c".
bool has_f16c() {
  static const bool have = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    if ((ecx & bit_AVX) == 0 || (ecx & bit_F16C) == 0 || (ecx & bit_OSXSAVE) == 0) return false;
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    return (xcr0_lo & 0x6u) == 0x6u;  // SSE and AVX state
  }();
  return have;
}

COLLTUNE_F16C_TARGET void f16c_f32_to_f16(const float* src, std::uint16_t* dst, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) store8_f16(dst + i, _mm256_loadu_ps(src + i));
  for (; i < count; ++i) dst[i] = f32_to_f16(src[i]);
}

COLLTUNE_F16C_TARGET void f16c_f16_to_f32(const std::uint16_t* src, float* dst, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(dst + i, load8_f16(src + i));
  for (; i < count; ++i) dst[i] = f16_to_f32(src[i]);
}

COLLTUNE_F16C_TARGET void f16c_reduce_f16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a,
                                          const std::uint16_t* b, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) store8_f16(out + i, vector_op(op, load8_f16(a + i), load8_f16(b + i)));
  for (; i < count; ++i) out[i] = f32_to_f16(scalar_op(op, f16_to_f32(a[i]), f16_to_f32(b[i])));
}

COLLTUNE_F16C_TARGET void f16c_reduce_f16_into_f32(ReduceOp op, float* inout, const std::uint16_t* in,
                                                   std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(inout + i, vector_op(op, _mm256_loadu_ps(inout + i), load8_f16(in + i)));
  for (; i < count; ++i) inout[i] = scalar_op(op, inout[i], f16_to_f32(in[i]));
}

#else  // portable loops with the same contract

bool has_f16c() { return false; }

void f16c_f32_to_f16(const float* src, std::uint16_t* dst, std::size_t count) { f32_to_f16(src, dst, count); }
void f16c_f16_to_f32(const std::uint16_t* src, float* dst, std::size_t count) { f16_to_f32(src, dst, count); }

void f16c_reduce_f16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                     std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = f32_to_f16(scalar_op(op, f16_to_f32(a[i]), f16_to_f32(b[i])));
}

void f16c_reduce_f16_into_f32(ReduceOp op, float* inout, const std::uint16_t* in, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) inout[i] = scalar_op(op, inout[i], f16_to_f32(in[i]));
}

#endif

}  // namespace colltune::coll::simd
