#pragma once
// fp16 (IEEE binary16) and bf16 (bfloat16) conversions, round to nearest even.
//
// Scalar conversions are inline and branch-free so loops over them vectorise (no F16C or
// _Float16 needed: the same code is correct on x86-64 and aarch64). Special values:
// - overflow: a finite value that rounds beyond the largest finite half becomes +-inf
//   (fp16: |x| >= 65520 -> inf, 65504 is the largest finite);
// - subnormals are produced and consumed exactly (gradual underflow, no flush to zero);
// - NaN stays NaN with its sign and top payload bits; the result is always a quiet NaN;
// - fp64 -> fp16 rounds once, directly from the double (no double rounding through fp32).
// The floating-point environment must be the default (round to nearest, no FTZ/DAZ; on the
// device: no --use_fast_math, no -ftz=true).
//
// The scalar conversions are the element math the CPU and the CUDA kernels share (COLLTUNE_HD,
// host_device.hpp): written once, tested exhaustively on the CPU.
#include <cstddef>
#include <cstdint>

#include "colltune/collectives/host_device.hpp"

namespace colltune::coll {

namespace half_detail {

// The integer type as wide as a source float type.
template <class F>
struct Bits;
template <>
struct Bits<float> {
  using U = std::uint32_t;
  static constexpr int kMant = 23, kBias = 127;
};
template <>
struct Bits<double> {
  using U = std::uint64_t;
  static constexpr int kMant = 52, kBias = 1023;
};

// 2^e as F, for the magic constants below (compile time).
template <class F>
COLLTUNE_HD constexpr F pow2(int e) {
  F r = 1;
  for (; e > 0; --e) r *= 2;
  for (; e < 0; ++e) r /= 2;
  return r;
}

// c ? a : b as mask arithmetic: a branch in the loop body would stop vectorisation.
template <class U>
COLLTUNE_HD constexpr U select(bool c, U a, U b) {
  const U mask = U{0} - static_cast<U>(c);
  return (a & mask) | (b & ~mask);
}

// The 16-bit NaN a NaN `u` (the bits of a float/double) rounds to: its sign, an all-ones
// exponent, the quiet bit, and the top M-1 bits of its payload.
template <class F, int E, int M>
COLLTUNE_HD constexpr std::uint16_t narrow_nan(typename Bits<F>::U u) {
  using U = typename Bits<F>::U;
  constexpr int kShift = Bits<F>::kMant - M;
  constexpr U kQuietInf = (((U{1} << E) - 1) << M) | (U{1} << (M - 1));
  const U sign = (u >> (sizeof(U) * 8 - 16)) & 0x8000u;
  return static_cast<std::uint16_t>(sign | kQuietInf | ((u >> kShift) & ((U{1} << M) - 1)));
}

// Round a float/double to a 16-bit format with E exponent bits and M mantissa bits.
// Steps: split sign; NaN -> quiet NaN with payload; |x| at or above the overflow threshold
// (max finite + half an ulp) -> inf; normal range -> rebias the exponent and round the
// mantissa to M bits with the "add half-ulp-minus-one plus the odd bit" trick; subnormal
// range -> add a magic power of two whose ulp is the target's subnormal ulp, so the FPU's
// round-to-nearest-even does the rounding, then subtract its bit pattern.
template <class F, int E, int M>
COLLTUNE_HD constexpr std::uint16_t narrow(F x) {
  using B = Bits<F>;
  using U = typename B::U;
  constexpr int kShift = B::kMant - M;
  constexpr int kBias = (1 << (E - 1)) - 1;
  constexpr U kSignBit = U{1} << (sizeof(U) * 8 - 1);
  constexpr U kExpAll = ((U{1} << (sizeof(U) * 8 - 1 - B::kMant)) - 1) << B::kMant;
  constexpr U kMinNormal = static_cast<U>(B::kBias + 1 - kBias) << B::kMant;
  constexpr U kOverflow = (static_cast<U>(B::kBias + kBias) << B::kMant) |
                          (((U{1} << (M + 1)) - 1) << (kShift - 1));
  constexpr F kMagic = pow2<F>(B::kMant + 1 - kBias - M);
  constexpr std::uint16_t kInf = static_cast<std::uint16_t>(((1u << E) - 1) << M);
  const U u = bit_cast<U>(x);
  const U ax = u & ~kSignBit;
  const U sign = (u >> (sizeof(U) * 8 - 16)) & 0x8000u;
  const U nan = narrow_nan<F, E, M>(u);
  const U rebased = ax - (static_cast<U>(B::kBias - kBias) << B::kMant);
  const U normal = (rebased + ((U{1} << (kShift - 1)) - 1) + ((rebased >> kShift) & 1)) >> kShift;
  const F mag = bit_cast<F>(ax) + kMagic;
  const U sub = bit_cast<U>(mag) - bit_cast<U>(kMagic);
  const U finite = select(ax >= kMinNormal, normal, sub);
  const U big = select(ax > kExpAll, nan, U{kInf});
  return static_cast<std::uint16_t>(sign | select(ax >= kOverflow, big, finite));
}

// fp16 inf/NaN (sign cleared: `em` = h & 0x7fff >= 0x7c00) as fp32 bits: all-ones exponent,
// the 10-bit payload on top of fp32's mantissa, a NaN made quiet.
COLLTUNE_HD constexpr std::uint32_t widen_special(std::uint32_t em) {
  return (em << 13) | 0x7f800000u | (static_cast<std::uint32_t>(em > 0x7c00u) << 22);
}

}  // namespace half_detail

// ---- scalar ---------------------------------------------------------------------------------

COLLTUNE_HD constexpr std::uint16_t f32_to_f16(float x) { return half_detail::narrow<float, 5, 10>(x); }
COLLTUNE_HD constexpr std::uint16_t f64_to_f16(double x) { return half_detail::narrow<double, 5, 10>(x); }
// bf16 keeps fp32's exponent, so rounding is integer arithmetic on the bit pattern (a carry
// into the exponent is the correct rounding up, up to inf); NaN is kept and made quiet.
COLLTUNE_HD constexpr std::uint16_t f32_to_bf16(float x) {
  const std::uint32_t u = bit_cast<std::uint32_t>(x);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>(half_detail::select((u & 0x7fffffffu) > 0x7f800000u, nan, rounded));
}
COLLTUNE_HD constexpr std::uint16_t f64_to_bf16(double x) { return half_detail::narrow<double, 8, 7>(x); }

// fp16 -> fp32 is exact. Normal: rebias the exponent; inf/NaN: all-ones exponent (NaN made
// quiet); subnormal/zero: the 10-bit mantissa as an integer times 2^-24.
COLLTUNE_HD constexpr float f16_to_f32(std::uint16_t h) {
  const std::uint32_t em = h & 0x7fffu;
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t normal = (em << 13) + (112u << 23);
  const std::uint32_t special = half_detail::widen_special(em);
  const std::uint32_t sub = bit_cast<std::uint32_t>(static_cast<float>(static_cast<std::int32_t>(em)) * 0x1p-24f);
  using half_detail::select;
  const std::uint32_t mag = select(em >= 0x7c00u, special, select(em < 0x0400u, sub, normal));
  return bit_cast<float>(sign | mag);
}
// What f32_to_f16 / f16_to_f32 return for a NaN. The CUDA kernels convert every other value
// with the hardware instruction (IEEE round to nearest even, subnormals kept, like the code
// above) and NaNs with these, so the two agree on every input (tested on every pattern).
COLLTUNE_HD constexpr std::uint16_t f32_nan_to_f16(float x) {
  return half_detail::narrow_nan<float, 5, 10>(bit_cast<std::uint32_t>(x));
}
COLLTUNE_HD constexpr float f16_nan_to_f32(std::uint16_t h) {
  return bit_cast<float>((static_cast<std::uint32_t>(h & 0x8000u) << 16) | half_detail::widen_special(h & 0x7fffu));
}
COLLTUNE_HD constexpr double f16_to_f64(std::uint16_t h) { return static_cast<double>(f16_to_f32(h)); }

// bf16 is the top half of an fp32: widening is a shift (exact, NaN payload kept as is).
COLLTUNE_HD constexpr float bf16_to_f32(std::uint16_t b) { return bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }
COLLTUNE_HD constexpr double bf16_to_f64(std::uint16_t b) { return static_cast<double>(bf16_to_f32(b)); }

// Largest finite fp16 value.
inline constexpr float kF16Max = 65504.0f;

// ---- bulk (dst[i] = convert(src[i]); src and dst must not overlap) ---------------------------

void f32_to_f16(const float* src, std::uint16_t* dst, std::size_t count);
void f16_to_f32(const std::uint16_t* src, float* dst, std::size_t count);
void f64_to_f16(const double* src, std::uint16_t* dst, std::size_t count);
void f16_to_f64(const std::uint16_t* src, double* dst, std::size_t count);
void f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count);
void bf16_to_f32(const std::uint16_t* src, float* dst, std::size_t count);

}  // namespace colltune::coll
