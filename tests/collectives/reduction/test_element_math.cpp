// The element math shared by the CPU reducers and the CUDA kernels (element_math.hpp,
// half.hpp): usable in constant expressions (so nvcc can use it in device code without a
// library call), the documented semantics of each op, and the NaN helpers the CUDA kernels use
// next to the hardware conversions agree with the portable conversions on every NaN.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>

#include "colltune/collectives/element_math.hpp"

namespace colltune::coll {
namespace {

using element::BF16;
using element::combine;
using element::F16;
using element::Max;
using element::Min;
using element::Native;
using element::Prod;
using element::Sum;

// Evaluated by the compiler: the whole element math is constexpr.
static_assert(combine<F16, Sum>(0x3c00, 0x3c00) == 0x4000);                   // 1 + 1 = 2
static_assert(combine<BF16, Prod>(0x4040, 0xc000) == 0xc0c0);                 // 3 * -2 = -6
static_assert(combine<Native<std::int32_t>, Sum>(2147483647, 1) == -2147483647 - 1);  // wraps
static_assert(combine<Native<std::int64_t>, Prod>(std::int64_t{1} << 62, 4) == 0);    // wraps
static_assert(f32_to_f16(65520.0f) == 0x7c00 && f16_to_f32(0x0001) == 0x1p-24f);
static_assert(f32_to_bf16(bf16_to_f32(0x4049)) == 0x4049);

TEST(ElementMath, MinAndMaxReturnAnOperandAsDocumented) {
  // min(a, b) = b < a ? b : a: equal operands (+0 and -0) give a, a NaN in b gives a.
  EXPECT_EQ(std::bit_cast<std::uint32_t>((combine<Native<float>, Min>(0.0f, -0.0f))), 0u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>((combine<Native<float>, Max>(-0.0f, 0.0f))), 0x80000000u);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ((combine<Native<float>, Min>(1.0f, nan)), 1.0f);
  EXPECT_EQ((combine<Native<float>, Max>(1.0f, nan)), 1.0f);
  EXPECT_EQ((combine<F16, Min>(0x4000, 0x3c00)), 0x3c00);
  EXPECT_EQ((combine<BF16, Max>(0xbf80, 0x3f80)), 0x3f80);
  EXPECT_EQ((combine<Native<std::int64_t>, Min>(-5, 3)), -5);
}

TEST(ElementMath, HalfSumsRoundOnceToNearestEven) {
  // 2048 + 1 is a tie in fp16 (ulp 2 there): even 2048. 2050 + 1 rounds to the even 2052.
  EXPECT_EQ((combine<F16, Sum>(f32_to_f16(2048.0f), 0x3c00)), f32_to_f16(2048.0f));
  EXPECT_EQ((combine<F16, Sum>(f32_to_f16(2050.0f), 0x3c00)), f32_to_f16(2052.0f));
  // bf16: 256 + 1 ties to 256, 258 + 1 to 260; overflow gives inf.
  EXPECT_EQ((combine<BF16, Sum>(f32_to_bf16(256.0f), 0x3f80)), f32_to_bf16(256.0f));
  EXPECT_EQ((combine<BF16, Sum>(f32_to_bf16(258.0f), 0x3f80)), f32_to_bf16(260.0f));
  EXPECT_EQ((combine<F16, Sum>(0x7bff, 0x7bff)), 0x7c00);
}

TEST(ElementMath, NanHelpersAgreeWithTheConversionsOnEveryNan) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7fff) <= 0x7c00) continue;
    const auto b = static_cast<std::uint16_t>(h);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f16_nan_to_f32(b)), std::bit_cast<std::uint32_t>(f16_to_f32(b))) << h;
  }
  for (std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t mant = 1; mant < (1u << 23); ++mant) {
      const float x = std::bit_cast<float>(sign | 0x7f800000u | mant);
      ASSERT_EQ(f32_nan_to_f16(x), f32_to_f16(x)) << std::hex << (sign | mant);
    }
  }
}

}  // namespace
}  // namespace colltune::coll
