// fp16/bf16 conversions: exhaustive round trips, round-to-nearest-even at every midpoint,
// specials, and agreement with an independent nearest-value search.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "colltune/collectives/half.hpp"

namespace colltune::coll {
namespace {

// Independent fp16 decoder: value = mantissa * 2^(exponent - 25) with the implicit bit.
double ref_f16_value(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1f) return m == 0 ? sign * std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(m + 1024, e - 25);
}

bool is_nan16(std::uint16_t h) { return (h & 0x7fff) > 0x7c00; }
bool is_nan_bf16(std::uint16_t h) { return (h & 0x7fff) > 0x7f80; }

// Nearest fp16 to a finite double by search over the sorted positive finite values; ties go to
// the even pattern; beyond 65504 + half an ulp (65520) -> inf.
std::uint16_t ref_to_f16(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= 65520.0) return sign | 0x7c00;
  std::uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {  // first pattern whose value >= a
    const auto mid = static_cast<std::uint16_t>((lo + hi) / 2);
    if (ref_f16_value(mid) < a) lo = static_cast<std::uint16_t>(mid + 1); else hi = mid;
  }
  std::uint16_t best = lo;
  if (lo > 0) {
    const double up = ref_f16_value(lo) - a, down = a - ref_f16_value(static_cast<std::uint16_t>(lo - 1));
    if (down < up || (down == up && ((lo - 1) & 1) == 0)) best = static_cast<std::uint16_t>(lo - 1);
  }
  return sign | best;
}

TEST(Half, KnownValues) {
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(0.1f), 0x2e66);
  EXPECT_EQ(f32_to_f16(3.14159265f), 0x4248);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_f16(0x1p-14f), 0x0400);
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);          // tie with 0 -> even (0)
  EXPECT_EQ(f32_to_f16(0x1.000002p-25f), 0x0001);   // just above the tie
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(is_nan16(f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(is_nan16(f32_to_f16(std::bit_cast<float>(0x7f800001u))));  // sNaN with low payload
  EXPECT_EQ(f32_to_f16(std::bit_cast<float>(0xffc00000u)), 0xfe00);
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_to_f32(0x03ff), 0x1.ff8p-15f);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(f16_to_f32(0x8000)), 0x80000000u);
  EXPECT_EQ(f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(3.14159265f), 0x4049);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // above the last midpoint
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x00018000u)), 0x0002);  // subnormal tie
  EXPECT_TRUE(is_nan_bf16(f32_to_bf16(std::bit_cast<float>(0x7f800001u))));
  EXPECT_EQ(bf16_to_f32(0xc049), -3.140625f);
  EXPECT_EQ(f64_to_f16(65504.0), 0x7bff);
  EXPECT_EQ(f64_to_f16(65520.0), 0x7c00);
  EXPECT_EQ(f64_to_f16(1e300), 0x7c00);
  EXPECT_EQ(f64_to_f16(1e-300), 0x0000);
  EXPECT_EQ(f64_to_f16(-0x1p-24), 0x8001);
  EXPECT_TRUE(is_nan16(f64_to_f16(std::numeric_limits<double>::quiet_NaN())));
}

TEST(Half, ExhaustiveF16RoundTrip) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    const float f = f16_to_f32(h);
    const double d = f16_to_f64(h);
    if (is_nan16(h)) {
      ASSERT_TRUE(std::isnan(f) && std::isnan(d)) << std::hex << i;
      // NaN: sign and payload kept, made quiet.
      ASSERT_EQ(f32_to_f16(f), h | 0x0200) << std::hex << i;
      ASSERT_EQ(f64_to_f16(d), h | 0x0200) << std::hex << i;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(f) & 0x00400000u, 0x00400000u) << std::hex << i;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), ref_f16_value(h)) << std::hex << i;
    ASSERT_EQ(d, ref_f16_value(h)) << std::hex << i;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << i;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << i;
    ASSERT_EQ(f64_to_f16(d), h) << std::hex << i;
  }
}

TEST(Half, ExhaustiveBf16RoundTrip) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto b = static_cast<std::uint16_t>(i);
    const float f = bf16_to_f32(b);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f), i << 16);
    if (is_nan_bf16(b)) {
      ASSERT_EQ(f32_to_bf16(f), b | 0x0040) << std::hex << i;
      continue;
    }
    ASSERT_EQ(f32_to_bf16(f), b) << std::hex << i;
    ASSERT_EQ(f64_to_bf16(static_cast<double>(f)), b) << std::hex << i;
  }
}

// Every midpoint between neighbouring finite fp16 values rounds to the even neighbour, and
// the nearest float/double on either side rounds to that side. The double cases catch double
// rounding (fp64 -> fp32 -> fp16 would get them wrong).
TEST(Half, RoundToNearestEvenAtEveryMidpoint) {
  for (std::uint16_t lo = 0; lo < 0x7bff; ++lo) {
    const auto hi = static_cast<std::uint16_t>(lo + 1);
    const double mid = (ref_f16_value(lo) + ref_f16_value(hi)) / 2;
    const std::uint16_t even = (lo & 1) ? hi : lo;
    const auto midf = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(midf), mid);
    ASSERT_EQ(f32_to_f16(midf), even) << std::hex << lo;
    ASSERT_EQ(f32_to_f16(-midf), even | 0x8000) << std::hex << lo;
    ASSERT_EQ(f32_to_f16(std::nextafter(midf, 1e9f)), hi) << std::hex << lo;
    ASSERT_EQ(f32_to_f16(std::nextafter(midf, 0.0f)), lo) << std::hex << lo;
    ASSERT_EQ(f64_to_f16(mid), even) << std::hex << lo;
    ASSERT_EQ(f64_to_f16(std::nextafter(mid, 1e9)), hi) << std::hex << lo;
    ASSERT_EQ(f64_to_f16(std::nextafter(mid, 0.0)), lo) << std::hex << lo;
  }
}

TEST(Half, Bf16MidpointsRoundToEven) {
  for (std::uint32_t lo = 0; lo < 0x7f7f; ++lo) {
    const std::uint32_t mid_bits = (lo << 16) | 0x8000u;
    const std::uint16_t even = static_cast<std::uint16_t>((lo & 1) ? lo + 1 : lo);
    ASSERT_EQ(f32_to_bf16(std::bit_cast<float>(mid_bits)), even) << std::hex << lo;
    ASSERT_EQ(f32_to_bf16(std::bit_cast<float>(mid_bits + 1)), lo + 1) << std::hex << lo;
    ASSERT_EQ(f32_to_bf16(std::bit_cast<float>(mid_bits - 1)), lo) << std::hex << lo;
    const double mid = static_cast<double>(std::bit_cast<float>(mid_bits));
    ASSERT_EQ(f64_to_bf16(std::nextafter(mid, 1e300)), lo + 1) << std::hex << lo;
  }
}

TEST(Half, RandomFloatsMatchNearestValueSearch) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 100000; ++i) {
    // Exponents near fp16's range most of the time, any pattern otherwise.
    std::uint32_t u = bits(rng);
    if (i % 4 != 0) u = (u & 0x807fffffu) | ((100u + u % 48u) << 23);
    const float f = std::bit_cast<float>(u);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), ref_to_f16(static_cast<double>(f))) << std::hex << u;
    const double d = static_cast<double>(f) * (1.0 + 0x1p-40);
    ASSERT_EQ(f64_to_f16(d), ref_to_f16(d)) << std::hex << u;
  }
}

TEST(Half, BulkMatchesScalar) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::uint32_t> bits;
  const std::size_t n = 1031;  // not a multiple of any vector width
  std::vector<float> f(n), fback(n);
  std::vector<double> d(n), dback(n);
  std::vector<std::uint16_t> h(n), b(n), hd(n);
  for (std::size_t i = 0; i < n; ++i) {
    f[i] = std::bit_cast<float>((bits(rng) & 0x87ffffffu) | 0x30000000u);
    d[i] = static_cast<double>(f[i]) * 1.0000001;
  }
  f32_to_f16(f.data(), h.data(), n);
  f32_to_bf16(f.data(), b.data(), n);
  f64_to_f16(d.data(), hd.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(h[i], f32_to_f16(f[i]));
    ASSERT_EQ(b[i], f32_to_bf16(f[i]));
    ASSERT_EQ(hd[i], f64_to_f16(d[i]));
  }
  f16_to_f32(h.data(), fback.data(), n);
  f16_to_f64(h.data(), dback.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(fback[i], f16_to_f32(h[i]));
    ASSERT_EQ(dback[i], static_cast<double>(f16_to_f32(h[i])));
  }
  bf16_to_f32(b.data(), fback.data(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(fback[i], bf16_to_f32(b[i]));
}

}  // namespace
}  // namespace colltune::coll
