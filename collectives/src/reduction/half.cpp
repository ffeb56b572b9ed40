// Bulk fp16/bf16 conversions: plain loops over the inline branch-free scalar conversions in
// half.hpp, restrict-qualified so the compiler vectorises them (checked with -fopt-info-vec
// and bench/micro/reduce.cpp). On x86-64 CPUs with F16C, fp32<->fp16 use those instructions
// instead, and with AVX2 (or AVX-512 BF16) so do fp32<->bf16 (half_simd.hpp), with identical
// results.
#include "colltune/collectives/half.hpp"

#include "half_simd.hpp"

namespace colltune::coll {

void f32_to_f16(const float* __restrict src, std::uint16_t* __restrict dst, std::size_t count) {
  if (simd::has_f16c()) return simd::f16c_f32_to_f16(src, dst, count);
  for (std::size_t i = 0; i < count; ++i) dst[i] = f32_to_f16(src[i]);
}

void f16_to_f32(const std::uint16_t* __restrict src, float* __restrict dst, std::size_t count) {
  if (simd::has_f16c()) return simd::f16c_f16_to_f32(src, dst, count);
  for (std::size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(src[i]);
}

void f64_to_f16(const double* __restrict src, std::uint16_t* __restrict dst, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = f64_to_f16(src[i]);
}

void f16_to_f64(const std::uint16_t* __restrict src, double* __restrict dst, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = f16_to_f64(src[i]);
}

void f32_to_bf16(const float* __restrict src, std::uint16_t* __restrict dst, std::size_t count) {
  if (simd::has_avx2()) return simd::f32_to_bf16(src, dst, count);
  for (std::size_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
}

void bf16_to_f32(const std::uint16_t* __restrict src, float* __restrict dst, std::size_t count) {
  if (simd::has_avx2()) return simd::bf16_to_f32(src, dst, count);
  for (std::size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(src[i]);
}

}  // namespace colltune::coll
