// fp16 compression: overflow detection and reporting, pre/post-scale, error statistics, and
// the fp16-wire / fp32-accumulate helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "colltune/collectives/compression.hpp"
#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Compression, OverflowIsCountedWithFirstIndex) {
  const std::vector<float> src = {1.0f, 65504.0f, 65519.0f, -3.0f, 65520.0f, -1e6f, kInf, std::nanf(""), 7.0f};
  std::vector<std::uint16_t> dst(src.size());
  const OverflowReport r = compress_f16(src.data(), dst.data(), src.size());
  EXPECT_EQ(r.overflowed, 2u);  // 65520 and -1e6; inf and NaN were not finite to begin with
  EXPECT_EQ(r.first_index, 4u);
  EXPECT_EQ(r.nonfinite_inputs, 2u);
  EXPECT_TRUE(r.any());
  EXPECT_EQ(dst[1], 0x7bff);
  EXPECT_EQ(dst[2], 0x7bff);
  EXPECT_EQ(dst[4], 0x7c00);
  EXPECT_EQ(dst[5], 0xfc00);
  EXPECT_EQ(dst[8], f32_to_f16(7.0f));
}

TEST(Compression, OverflowFoundInLargeBuffersAndF64) {
  std::vector<double> src(3 * 1000003, 1.5);
  src[2500000] = 70000.0;
  src[2999999] = -1e300;
  std::vector<std::uint16_t> dst(src.size());
  OverflowReport r = compress_f16(src.data(), dst.data(), src.size());
  EXPECT_EQ(r.overflowed, 2u);
  EXPECT_EQ(r.first_index, 2500000u);
  // A prescale of 1/4 brings 70000 into range; -1e300 still overflows.
  r = compress_f16(src.data(), dst.data(), src.size(), 0.25);
  EXPECT_EQ(r.overflowed, 1u);
  EXPECT_EQ(r.first_index, 2999999u);
  EXPECT_EQ(dst[2500000], f64_to_f16(17500.0));
  std::vector<float> f(src.begin(), src.begin() + 2000000);
  f[1999999] = 1e5f;
  std::vector<std::uint16_t> h(f.size());
  r = compress_f16(f.data(), h.data(), f.size());
  EXPECT_EQ(r.overflowed, 1u);
  EXPECT_EQ(r.first_index, 1999999u);
}

// bf16 has fp32's range: only values rounding beyond its largest finite (0x7f7f, about
// 3.39e38) overflow, which a prescale can cause and fp64 inputs can carry.
TEST(Compression, Bf16OverflowIsCountedWithFirstIndex) {
  std::vector<float> src(4099, 1.5f);  // beyond one SIMD chunk, not a multiple of a vector
  src[7] = std::numeric_limits<float>::max();  // above the last midpoint: rounds to inf
  src[9] = kInf;
  src[4000] = std::nanf("");
  src[4098] = -3e38f;
  std::vector<std::uint16_t> dst(src.size());
  OverflowReport r = compress_bf16(src.data(), dst.data(), src.size());
  EXPECT_EQ(r.overflowed, 1u);
  EXPECT_EQ(r.first_index, 7u);
  EXPECT_EQ(r.nonfinite_inputs, 2u);
  EXPECT_EQ(dst[7], 0x7f80);
  EXPECT_EQ(dst[4098], f32_to_bf16(-3e38f));
  r = compress_bf16(src.data(), dst.data(), src.size(), 2.0);  // -6e38 overflows too
  EXPECT_EQ(r.overflowed, 2u);
  EXPECT_EQ(dst[4098], 0xff80);
  for (std::size_t i : {std::size_t{0}, std::size_t{4097}}) EXPECT_EQ(dst[i], f32_to_bf16(3.0f));
  const std::vector<double> d = {1.0, 1e39, -2.5, 1e300};
  std::vector<std::uint16_t> h(d.size());
  r = compress_bf16(d.data(), h.data(), d.size());
  EXPECT_EQ(r.overflowed, 2u);
  EXPECT_EQ(r.first_index, 1u);
  std::vector<double> back(d.size());
  decompress_bf16(h.data(), back.data(), h.size(), 0.5);
  EXPECT_EQ(back[0], 0.5);
  EXPECT_EQ(back[2], -1.25);
  std::vector<float> fback(src.size());
  decompress_bf16(dst.data(), fback.data(), dst.size());
  EXPECT_EQ(fback[0], 3.0f);
}

TEST(Compression, NoOverflowReportsNothing) {
  const std::vector<float> src = {0.0f, -65504.0f, 1e-9f};
  std::vector<std::uint16_t> dst(src.size());
  const OverflowReport r = compress_f16(src.data(), dst.data(), src.size());
  EXPECT_FALSE(r.any());
  EXPECT_EQ(r.first_index, OverflowReport::npos);
  EXPECT_EQ(compress_f16(static_cast<const float*>(nullptr), nullptr, 0).overflowed, 0u);
}

TEST(Compression, MergeKeepsTheFirstIndex) {
  OverflowReport whole;
  OverflowReport a;
  OverflowReport b;
  b.overflowed = 3;
  b.first_index = 5;
  whole.merge(a, 0);
  whole.merge(b, 100);
  EXPECT_EQ(whole.overflowed, 3u);
  EXPECT_EQ(whole.first_index, 105u);
  OverflowReport c;
  c.overflowed = 1;
  c.first_index = 0;
  whole.merge(c, 200);
  EXPECT_EQ(whole.overflowed, 4u);
  EXPECT_EQ(whole.first_index, 105u);
}

TEST(Compression, FindOverflowInAReducedBuffer) {
  std::vector<std::uint16_t> a = {f32_to_f16(40000.0f), f32_to_f16(1.0f), f32_to_f16(-40000.0f)};
  const std::vector<std::uint16_t> b = a;
  reduce(DType::f16, ReduceOp::sum, a.data(), b.data(), a.size());  // +-80000 -> +-inf
  const OverflowReport r = find_f16_overflow(a.data(), a.size());
  EXPECT_EQ(r.overflowed, 2u);
  EXPECT_EQ(r.first_index, 0u);
  EXPECT_EQ(f16_to_f32(a[1]), 2.0f);
}

TEST(Compression, DecompressAppliesPostscale) {
  const std::vector<std::uint16_t> h = {f32_to_f16(3.0f), f32_to_f16(-0.5f), 0x7c00};
  std::vector<float> f(h.size());
  std::vector<double> d(h.size());
  decompress_f16(h.data(), f.data(), h.size(), 0.25);
  decompress_f16(h.data(), d.data(), h.size());
  EXPECT_EQ(f, (std::vector<float>{0.75f, -0.125f, kInf}));
  EXPECT_EQ(d[0], 3.0);
  EXPECT_EQ(d[1], -0.5);
}

TEST(Compression, RoundTripErrorIsWithinUnitRoundoff) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
  std::vector<float> src(10007);
  for (float& x : src) x = u(rng);
  std::vector<std::uint16_t> h(src.size());
  std::vector<float> back(src.size());
  ASSERT_FALSE(compress_f16(src.data(), h.data(), src.size()).any());
  decompress_f16(h.data(), back.data(), src.size());
  const CompressionError e = compression_error(back.data(), src.data(), src.size());
  EXPECT_EQ(e.count, src.size());
  EXPECT_LE(e.max_rel, kF16UnitRoundoff);
  EXPECT_GT(e.max_rel, kF16UnitRoundoff / 2);  // some element is near the worst case
  EXPECT_LE(e.rms_rel, e.max_rel);
  EXPECT_GT(e.rms_rel, 0.0);
  EXPECT_LE(e.max_abs, 0.25);  // half an ulp at 512..1024
}

TEST(Compression, ErrorStatisticsOnKnownData) {
  const std::vector<double> exact = {1.0, 2.5, 4.0, 0.0, 10.0, 3.0};
  const std::vector<double> approx = {1.0, 2.0, 4.4, 0.5, std::numeric_limits<double>::infinity(), 3.0};
  const CompressionError e = compression_error(approx.data(), exact.data(), exact.size());
  EXPECT_EQ(e.count, 6u);
  EXPECT_EQ(e.nonfinite, 1u);
  EXPECT_DOUBLE_EQ(e.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(e.max_rel, 0.2);
  EXPECT_EQ(e.worst_index, 1u);
  // Relative errors over exact != 0 and finite approx: 0, 0.2, 0.1, 0.
  EXPECT_DOUBLE_EQ(e.rms_rel, std::sqrt((0.04 + 0.01) / 4.0));
}

// A 4-rank ring's reduce-scatter hops on one element: with fp16 accumulation each partial sum
// is rounded to fp16 (1 + 2^-11 * 3 loses the small terms); accumulating in fp32 with fp16 only
// on the wire keeps them until the final rounding.
TEST(Compression, Fp32AccumulationIsExactWhereFp16IsNot) {
  const std::vector<float> contrib = {2048.0f, 1.0f, 1.0f, 1.0f};
  std::vector<std::uint16_t> h16 = {f32_to_f16(contrib[0])};
  std::vector<float> acc = {contrib[0]};
  for (std::size_t r = 1; r < contrib.size(); ++r) {
    const std::uint16_t mine = f32_to_f16(contrib[r]);
    reduce(DType::f16, ReduceOp::sum, h16.data(), &mine, 1);  // 2048 + 1 ties to 2048
    std::uint16_t wire = 0;
    ASSERT_FALSE(encode_f16_wire(&contrib[r], &wire, 1).any());
    reduce_f16_into_f32(acc.data(), &wire, 1);
  }
  EXPECT_EQ(f16_to_f32(h16[0]), 2048.0f);
  EXPECT_EQ(acc[0], 2051.0f);
  std::uint16_t out = 0;
  ASSERT_FALSE(encode_f16_wire(acc.data(), &out, 1).any());
  EXPECT_EQ(f16_to_f32(out), 2052.0f);  // one final rounding
}

TEST(Compression, WireAccumulateOpsAndOverflow) {
  std::vector<float> acc = {1.0f, -2.0f, 3.0f, 100000.0f};
  const std::vector<std::uint16_t> in = {f32_to_f16(4.0f), f32_to_f16(-8.0f), f32_to_f16(0.5f), f32_to_f16(1.0f)};
  std::vector<float> mn = acc, mx = acc, pr = acc;
  reduce_f16_into_f32(ReduceOp::min, mn.data(), in.data(), in.size());
  reduce_f16_into_f32(ReduceOp::max, mx.data(), in.data(), in.size());
  reduce_f16_into_f32(ReduceOp::prod, pr.data(), in.data(), in.size());
  EXPECT_EQ(mn, (std::vector<float>{1.0f, -8.0f, 0.5f, 1.0f}));
  EXPECT_EQ(mx, (std::vector<float>{4.0f, -2.0f, 3.0f, 100000.0f}));
  EXPECT_EQ(pr, (std::vector<float>{4.0f, 16.0f, 1.5f, 100000.0f}));
  std::vector<std::uint16_t> wire(acc.size());
  const OverflowReport r = encode_f16_wire(pr.data(), wire.data(), pr.size());
  EXPECT_EQ(r.overflowed, 1u);
  EXPECT_EQ(r.first_index, 3u);
  std::vector<float> decoded(acc.size());
  decode_f16_wire(wire.data(), decoded.data(), wire.size());
  EXPECT_EQ(decoded[2], 1.5f);
  EXPECT_EQ(decoded[3], kInf);
}

TEST(Compression, NullBuffersAreErrors) {
  std::uint16_t h = 0;
  EXPECT_THROW(compress_f16(static_cast<const float*>(nullptr), &h, 1), Error);
  EXPECT_THROW(decompress_f16(&h, static_cast<float*>(nullptr), 1), Error);
  EXPECT_THROW(reduce_f16_into_f32(nullptr, &h, 1), Error);
}

}  // namespace
}  // namespace colltune::coll
