// The F16C kernels give bit-identical results to the portable conversions and reducers.
// Skipped on CPUs (and architectures) without F16C.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "colltune/collectives/half.hpp"
#include "half_simd.hpp"

namespace colltune::coll {
namespace {

float portable_op(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::prod: return a * b;
    case ReduceOp::min: return b < a ? b : a;
    case ReduceOp::max: return a < b ? b : a;
    default: return a + b;
  }
}

TEST(HalfSimd, EveryF16PatternWidensIdentically) {
  if (!simd::has_f16c()) GTEST_SKIP() << "no F16C on this CPU";
  std::vector<std::uint16_t> h(65536 + 5);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint16_t>(i);
  std::vector<float> f(h.size());
  simd::f16c_f16_to_f32(h.data(), f.data(), h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f[i]), std::bit_cast<std::uint32_t>(f16_to_f32(h[i]))) << std::hex << i;
  }
}

TEST(HalfSimd, NarrowingMatchesPortableAtMidpointsAndSpecials) {
  if (!simd::has_f16c()) GTEST_SKIP() << "no F16C on this CPU";
  std::vector<float> f;
  for (std::uint32_t lo = 0; lo < 0x7c00; ++lo) {
    const float a = f16_to_f32(static_cast<std::uint16_t>(lo));
    const float b = f16_to_f32(static_cast<std::uint16_t>(lo + 1));
    const float mid = (a + b) / 2;  // exact: 12 significant bits
    for (float x : {a, mid, std::nextafter(mid, 1e30f), std::nextafter(mid, 0.0f)}) {
      f.push_back(x);
      f.push_back(-x);
    }
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 100000; ++i) f.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  for (std::uint32_t bits : {0x7f800000u, 0xff800000u, 0x7f800001u, 0x7fc00000u, 0xffffffffu, 0x00000001u}) {
    f.push_back(std::bit_cast<float>(bits));
  }
  std::vector<std::uint16_t> h(f.size());
  simd::f16c_f32_to_f16(f.data(), h.data(), f.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    ASSERT_EQ(h[i], f32_to_f16(f[i])) << std::hex << std::bit_cast<std::uint32_t>(f[i]);
  }
}

TEST(HalfSimd, ReducersMatchPortable) {
  if (!simd::has_f16c()) GTEST_SKIP() << "no F16C on this CPU";
  std::mt19937 rng(12);
  const std::size_t n = 10003;
  std::vector<std::uint16_t> a(n), b(n);
  std::vector<float> acc(n);
  for (std::size_t i = 0; i < n; ++i) {
    do a[i] = static_cast<std::uint16_t>(rng()); while ((a[i] & 0x7fff) > 0x7c00);
    do b[i] = static_cast<std::uint16_t>(rng()); while ((b[i] & 0x7fff) > 0x7c00);
    acc[i] = std::bit_cast<float>((static_cast<std::uint32_t>(rng()) & 0x8fffffffu) | 0x30000000u);
  }
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    std::vector<std::uint16_t> out(n);
    simd::f16c_reduce_f16(op, out.data(), a.data(), b.data(), n);
    std::vector<float> facc = acc;
    simd::f16c_reduce_f16_into_f32(op, facc.data(), b.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const float r = portable_op(op, f16_to_f32(a[i]), f16_to_f32(b[i]));
      if (r != r) continue;  // inf - inf: NaN patterns may differ
      ASSERT_EQ(out[i], f32_to_f16(r)) << i;
      ASSERT_EQ(facc[i], portable_op(op, acc[i], f16_to_f32(b[i]))) << i;
    }
  }
}

}  // namespace
}  // namespace colltune::coll
