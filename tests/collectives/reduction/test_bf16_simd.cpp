// The bf16 SIMD kernels (AVX2 integer rounding, AVX-512 BF16 conversion) give the scalar
// definition's bits: every bf16 pattern narrowed from fp32 with each kind of low half (zero,
// below, at and above the rounding midpoint, random), every pattern widened, and every op
// reduced over every bf16 pattern against special and random partners. Each kernel is skipped
// on CPUs without its instruction set.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "colltune/collectives/element_math.hpp"
#include "half_simd.hpp"

namespace colltune::coll {
namespace {

using Narrow = void (*)(const float*, std::uint16_t*, std::size_t);
using Reduce = void (*)(ReduceOp, std::uint16_t*, const std::uint16_t*, const std::uint16_t*, std::size_t);

struct Kernel {
  std::string name;
  bool available;
  Narrow narrow;
  Reduce reduce;
};

std::vector<Kernel> kernels() {
  return {{"avx2", simd::has_avx2(), simd::avx2_f32_to_bf16, simd::avx2_reduce_bf16},
          {"avx512_bf16", simd::has_avx512_bf16(), simd::avx512_f32_to_bf16, simd::avx512_reduce_bf16},
          {"dispatch", true, simd::f32_to_bf16, simd::reduce_bf16}};
}

bool is_nan_bf16(std::uint16_t b) { return (b & 0x7fff) > 0x7f80; }

// All 65536 top halves with one low half; one extra element so no length is a vector multiple.
std::vector<float> every_pattern(std::uint32_t low) {
  std::vector<float> f(65537);
  for (std::uint32_t i = 0; i < f.size(); ++i) f[i] = std::bit_cast<float>(((i & 0xffffu) << 16) | low);
  return f;
}

TEST(Bf16Simd, EveryPatternNarrowsAsTheScalarDefinition) {
  std::mt19937 rng(5);
  for (const Kernel& k : kernels()) {
    if (!k.available) continue;
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, static_cast<std::uint32_t>(0xffffu & rng())}) {
      const std::vector<float> f = every_pattern(low);
      std::vector<std::uint16_t> out(f.size());
      k.narrow(f.data(), out.data(), f.size());
      for (std::size_t i = 0; i < f.size(); ++i) {
        ASSERT_EQ(out[i], f32_to_bf16(f[i])) << k.name << " bits " << std::hex << std::bit_cast<std::uint32_t>(f[i]);
      }
    }
  }
}

TEST(Bf16Simd, EveryPatternWidensToTheTopHalf) {
  if (!simd::has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::vector<std::uint16_t> h(65536 + 7);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint16_t>(i);
  std::vector<float> f(h.size());
  simd::avx2_bf16_to_f32(h.data(), f.data(), h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f[i]), static_cast<std::uint32_t>(h[i]) << 16) << std::hex << i;
  }
}

// Partners for every pattern a: zeros, ones, the smallest subnormal and normal, the largest
// finite, infinities, a NaN, and random patterns. Both operands NaN is left out: which
// payload survives then depends on operand order, which the scalar compiler may swap.
std::vector<std::uint16_t> partners(std::size_t n, std::uint16_t special, std::mt19937& rng) {
  std::vector<std::uint16_t> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = special == 0xffff ? static_cast<std::uint16_t>(rng()) : special;
  return b;
}

TEST(Bf16Simd, EveryOpOverEveryPatternMatchesTheElementMath) {
  std::mt19937 rng(9);
  std::vector<std::uint16_t> a(65536 + 13);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::uint16_t>(i * 40503u);  // every pattern, shuffled
  const std::uint16_t specials[] = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x0001, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80,
                                    0x7fc1, 0xffff /* random */};
  for (const Kernel& k : kernels()) {
    if (!k.available) continue;
    for (std::uint16_t special : specials) {
      const std::vector<std::uint16_t> b = partners(a.size(), special, rng);
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
        std::vector<std::uint16_t> out(a.size()), in_place = a;
        k.reduce(op, out.data(), a.data(), b.data(), a.size());
        k.reduce(op, in_place.data(), in_place.data(), b.data(), a.size());
        element::with_op(op, [&]<class O>() {
          for (std::size_t i = 0; i < a.size(); ++i) {
            if (is_nan_bf16(a[i]) && is_nan_bf16(b[i])) continue;
            const std::uint16_t want = element::combine<element::BF16, O>(a[i], b[i]);
            ASSERT_EQ(out[i], want) << k.name << " " << to_string(op) << " a " << std::hex << a[i] << " b " << b[i];
            ASSERT_EQ(in_place[i], want) << k.name << " in place";
          }
        });
      }
    }
  }
}

}  // namespace
}  // namespace colltune::coll
