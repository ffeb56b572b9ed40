// Reducers: every dtype x op against a scalar reference (bit-exact on small integers), fp16 and
// bf16 correctly rounded against a double reference, in-place and out-of-place, and scale().
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max, ReduceOp::prod};

// A buffer of `count` elements of a dtype, filled from and read back as doubles.
struct Buf {
  DType dtype;
  std::vector<unsigned char> bytes;
  Buf(DType t, std::size_t count) : dtype(t), bytes(count * dtype_size(t)) {}
  void* data() { return bytes.data(); }
  void set(std::size_t i, double v) {
    unsigned char* p = bytes.data() + i * dtype_size(dtype);
    auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
    switch (dtype) {
      case DType::f32: return put(static_cast<float>(v));
      case DType::f64: return put(v);
      case DType::f16: return put(f64_to_f16(v));
      case DType::bf16: return put(f64_to_bf16(v));
      case DType::i32: return put(static_cast<std::int32_t>(v));
      case DType::i64: return put(static_cast<std::int64_t>(v));
    }
  }
  double get(std::size_t i) const {
    const unsigned char* p = bytes.data() + i * dtype_size(dtype);
    auto take = [p]<class T>(T) { T x; std::memcpy(&x, p, sizeof x); return x; };
    switch (dtype) {
      case DType::f32: return take(0.0f);
      case DType::f64: return take(0.0);
      case DType::f16: return f16_to_f64(take(std::uint16_t{}));
      case DType::bf16: return static_cast<double>(bf16_to_f32(take(std::uint16_t{})));
      case DType::i32: return take(std::int32_t{});
      case DType::i64: return static_cast<double>(take(std::int64_t{}));
    }
    return 0;
  }
};

double ref_op(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return a + b;
    case ReduceOp::prod: return a * b;
    case ReduceOp::min: return std::fmin(a, b);
    case ReduceOp::max: return std::fmax(a, b);
  }
  return 0;
}

// Small integers: every result is exact in every dtype (bf16 holds integers up to 256).
double small_value(std::mt19937& rng, ReduceOp op) {
  const int range = op == ReduceOp::prod ? 8 : 100;
  return std::uniform_int_distribution<int>(-range, range)(rng);
}

std::string label(DType t, ReduceOp op, std::size_t n) {
  return std::string(to_string(t)) + " " + std::string(to_string(op)) + " n=" + std::to_string(n);
}

TEST(Reducer, EveryDtypeAndOpMatchesScalarReference) {
  std::mt19937 rng(1);
  for (DType t : kDTypes) {
    for (ReduceOp op : kOps) {
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1027}}) {
        Buf a(t, n), b(t, n), out(t, n);
        for (std::size_t i = 0; i < n; ++i) {
          a.set(i, small_value(rng, op));
          b.set(i, small_value(rng, op));
        }
        Buf inplace = a;
        reduce(t, op, inplace.data(), b.data(), n);
        reduce_into(t, op, out.data(), a.data(), b.data(), n);
        Buf into_b = b;  // out aliases b
        reduce_into(t, op, into_b.data(), a.data(), into_b.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
          const double want = ref_op(op, a.get(i), b.get(i));
          ASSERT_EQ(inplace.get(i), want) << label(t, op, n) << " i=" << i;
          ASSERT_EQ(out.get(i), want) << label(t, op, n) << " i=" << i;
          ASSERT_EQ(into_b.get(i), want) << label(t, op, n) << " i=" << i;
        }
      }
    }
  }
}

// fp16/bf16 sum and prod via fp32 are correctly rounded: equal to the exact double result
// rounded once. min/max return an original bit pattern.
TEST(Reducer, HalfSumAndProdAreCorrectlyRounded) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<int> pattern(0, 0xffff);
  const std::size_t n = 4099;
  for (DType t : {DType::f16, DType::bf16}) {
    const bool f16 = t == DType::f16;
    auto widen = [f16](std::uint16_t h) { return f16 ? f16_to_f64(h) : static_cast<double>(bf16_to_f32(h)); };
    auto narrow = [f16](double x) { return f16 ? f64_to_f16(x) : f64_to_bf16(x); };
    std::vector<std::uint16_t> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      do a[i] = static_cast<std::uint16_t>(pattern(rng)); while (std::isnan(widen(a[i])));
      do b[i] = static_cast<std::uint16_t>(pattern(rng)); while (std::isnan(widen(b[i])));
    }
    for (ReduceOp op : kOps) {
      std::vector<std::uint16_t> r = a;
      reduce(t, op, r.data(), b.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        const double exact = ref_op(op, widen(a[i]), widen(b[i]));
        if (std::isnan(exact)) {  // inf - inf, 0 * inf
          ASSERT_TRUE(std::isnan(widen(r[i])));
          continue;
        }
        const bool minmax = op == ReduceOp::min || op == ReduceOp::max;
        const std::uint16_t want = minmax ? (widen(a[i]) == exact ? a[i] : b[i]) : narrow(exact);
        if (minmax && widen(a[i]) == widen(b[i])) continue;  // +0 vs -0: either pattern
        ASSERT_EQ(r[i], want) << label(t, op, n) << " a=" << a[i] << " b=" << b[i];
      }
    }
  }
}

TEST(Reducer, IntegerSumAndProdWrap) {
  std::int32_t a32[2] = {std::numeric_limits<std::int32_t>::max(), 65536};
  const std::int32_t b32[2] = {1, 65536};
  reduce(DType::i32, ReduceOp::sum, a32, b32, 1);
  EXPECT_EQ(a32[0], std::numeric_limits<std::int32_t>::min());
  reduce(DType::i32, ReduceOp::prod, a32 + 1, b32 + 1, 1);
  EXPECT_EQ(a32[1], 0);
  std::int64_t a64 = std::numeric_limits<std::int64_t>::min();
  const std::int64_t b64 = -1;
  reduce(DType::i64, ReduceOp::sum, &a64, &b64, 1);
  EXPECT_EQ(a64, std::numeric_limits<std::int64_t>::max());
}

TEST(Reducer, ScaleEveryDtype) {
  for (DType t : kDTypes) {
    const std::size_t n = 37;
    Buf buf(t, n);
    for (std::size_t i = 0; i < n; ++i) buf.set(i, static_cast<double>(i) * 2.0 - 36.0);
    scale(t, buf.data(), n, 0.5);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(buf.get(i), static_cast<double>(i) - 18.0) << to_string(t);
    scale(t, buf.data(), n, 1.0);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(buf.get(i), static_cast<double>(i) - 18.0) << to_string(t);
  }
}

TEST(Reducer, ScaleIntegersDivideExactlyForAverage) {
  std::vector<std::int32_t> v = {9, -7, 7, 2147483646, -2147483647 - 1};
  scale(DType::i32, v.data(), v.size(), 1.0 / 3.0);  // 9 * 0.333.. would truncate to 2
  EXPECT_EQ(v, (std::vector<std::int32_t>{3, -2, 2, 715827882, -715827882}));
  std::vector<std::int64_t> w = {10, -10, 1000000000000001};
  scale(DType::i64, w.data(), w.size(), 2.5);
  EXPECT_EQ(w, (std::vector<std::int64_t>{25, -25, 2500000000000002}));
  std::vector<std::int32_t> x = {-2147483647 - 1, 5};
  scale(DType::i32, x.data(), x.size(), -1.0);
  EXPECT_EQ(x, (std::vector<std::int32_t>{-2147483647 - 1, -5}));  // wraps like negation
}

TEST(Reducer, ScaleHalfRoundsOnceToNearest) {
  std::vector<std::uint16_t> h(0x7c00);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint16_t>(i);
  const std::vector<std::uint16_t> orig = h;
  const double factor = 1.0 / 3.0;
  scale(DType::f16, h.data(), h.size(), factor);
  const double f = static_cast<double>(static_cast<float>(factor));
  for (std::size_t i = 0; i < h.size(); ++i) ASSERT_EQ(h[i], f64_to_f16(f16_to_f64(orig[i]) * f)) << i;
}

TEST(Reducer, AvgPostScaleFactor) {
  EXPECT_EQ(post_scale_factor(ReduceOp::avg, 4), 0.25);
  EXPECT_EQ(post_scale_factor(ReduceOp::sum, 4), 1.0);
  EXPECT_THROW(post_scale_factor(ReduceOp::avg, 0), Error);
}

TEST(Reducer, BadInputIsAnError) {
  float x = 1.0f;
  EXPECT_THROW(reduce(DType::f32, ReduceOp::sum, nullptr, &x, 1), Error);
  EXPECT_THROW(reduce_into(DType::f32, ReduceOp::sum, &x, nullptr, &x, 1), Error);
  EXPECT_THROW(scale(DType::f32, nullptr, 3, 0.5), Error);
  EXPECT_THROW(reduce(static_cast<DType>(42), ReduceOp::sum, &x, &x, 1), Error);
  EXPECT_THROW(reduce(DType::f32, static_cast<ReduceOp>(42), &x, &x, 1), Error);
  EXPECT_NO_THROW(reduce(DType::f32, ReduceOp::sum, nullptr, nullptr, 0));
}

}  // namespace
}  // namespace colltune::coll
