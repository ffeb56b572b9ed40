// The CUDA kernels against the CPU, bit for bit: reduction of every dtype x op on random
// NaN-free inputs (every fp16/bf16 pattern; random fp32/fp64 bits across the exponent range,
// subnormals included; random integers, so sums and products wrap) at aligned, misaligned and
// unequally aligned offsets; scaling; fp16/bf16 compression with its overflow counts, every
// fp16/bf16 pattern decompressed; and the fp16 hardware fast path against the shared
// conversion code over every fp32 pattern. Skips without a device.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "colltune/collectives/compression.hpp"
#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"
#include "conversion_check.hpp"
#include "gpu_test_util.hpp"

namespace colltune {
namespace {

using coll::DType;
using coll::ReduceOp;
namespace cuda = coll::cuda;

constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max, ReduceOp::prod};

bool is_nan(DType t, const std::byte* p) {
  switch (t) {
    case DType::f32: { float x; std::memcpy(&x, p, 4); return x != x; }
    case DType::f64: { double x; std::memcpy(&x, p, 8); return x != x; }
    case DType::f16: { std::uint16_t h; std::memcpy(&h, p, 2); return (h & 0x7fff) > 0x7c00; }
    case DType::bf16: { std::uint16_t h; std::memcpy(&h, p, 2); return (h & 0x7fff) > 0x7f80; }
    default: return false;
  }
}

// Random elements of `t`, never NaN: every 16-bit pattern in turn for fp16/bf16, random bits
// for the others (floats: any exponent, so huge, tiny and subnormal values all occur).
std::vector<std::byte> random_elements(DType t, std::size_t n, std::mt19937_64& rng) {
  const std::size_t es = coll::dtype_size(t);
  std::vector<std::byte> v(n * es);
  for (std::size_t i = 0; i < n; ++i) {
    std::byte* p = v.data() + i * es;
    do {
      const std::uint64_t bits = (t == DType::f16 || t == DType::bf16) ? (i * 40503u + (rng() & 1)) & 0xffff : rng();
      std::memcpy(p, &bits, es);
    } while (is_nan(t, p));
  }
  return v;
}

// Element-wise equality, except that a NaN result only needs to be a NaN (the GPU's arithmetic
// returns the canonical NaN, the CPU's a payload).
long long first_difference(DType t, const std::vector<std::byte>& gpu, const std::vector<std::byte>& cpu) {
  const std::size_t es = coll::dtype_size(t);
  for (std::size_t i = 0; i < cpu.size() / es; ++i) {
    const std::byte* g = gpu.data() + i * es;
    const std::byte* c = cpu.data() + i * es;
    if (is_nan(t, c) ? !is_nan(t, g) : std::memcmp(g, c, es) != 0) return static_cast<long long>(i);
  }
  return -1;
}

class GpuKernels : public ::testing::TestWithParam<std::tuple<DType, ReduceOp>> {
 protected:
  void SetUp() override { COLLTUNE_REQUIRE_GPU(); }
};

// out = a op b over [0, n) at element offsets (oa, ob, oo) into larger buffers: equal offsets
// take the vector path with a head, unequal ones the scalar path; in place when oo = oa.
void check_reduce(DType t, ReduceOp op, std::size_t n, std::size_t oa, std::size_t ob, std::size_t oo, bool in_place,
                  std::mt19937_64& rng) {
  const std::size_t es = coll::dtype_size(t), pad = 4;
  const auto a = random_elements(t, n + pad, rng), b = random_elements(t, n + pad, rng);
  auto da = test::to_device(a);
  auto db = test::to_device(b);
  cuda::DeviceMemory dout((n + pad) * es);
  void* out = in_place ? da.bytes() + oa * es : dout.bytes() + oo * es;
  cuda::reduce_into(t, op, out, da.bytes() + oa * es, db.bytes() + ob * es, n, nullptr);
  cuda::synchronize(nullptr);
  std::vector<std::byte> gpu(n * es), cpu(n * es);
  if (n > 0) {
    std::vector<std::byte> all((n + pad) * es);
    (in_place ? da : dout).download(all.data(), all.size());
    std::memcpy(gpu.data(), all.data() + (in_place ? oa : oo) * es, n * es);
  }
  coll::reduce_into(t, op, cpu.data(), a.data() + oa * es, b.data() + ob * es, n);
  const long long bad = first_difference(t, gpu, cpu);
  EXPECT_EQ(bad, -1) << coll::to_string(t) << " " << coll::to_string(op) << " n=" << n << " offsets " << oa << ","
                     << ob << "," << oo << (in_place ? " in place" : "");
}

TEST_P(GpuKernels, ReduceMatchesTheCpuBitForBit) {
  const auto [t, op] = GetParam();
  std::mt19937_64 rng(static_cast<unsigned>(t) * 10 + static_cast<unsigned>(op));
  for (std::size_t n : {0, 1, 5, 17, 1000, 65539}) {
    check_reduce(t, op, n, 0, 0, 0, false, rng);
    check_reduce(t, op, n, 1, 1, 1, false, rng);  // head before the first 16-byte boundary
    check_reduce(t, op, n, 0, 1, 3, false, rng);  // unequally aligned: scalar loop
    check_reduce(t, op, n, 3, 2, 3, true, rng);   // in place
  }
  check_reduce(t, op, (std::size_t{1} << 22) + 3, 1, 1, 1, false, rng);
}

TEST_P(GpuKernels, ScaleMatchesTheCpuBitForBit) {
  const auto [t, op] = GetParam();
  if (op != ReduceOp::sum) GTEST_SKIP() << "scaling does not depend on the op";
  std::mt19937_64 rng(3);
  const std::size_t n = 4099;
  for (double factor : {1.0 / 3.0, 1.0 / 16.0, 0.37, -1.0, 2.5, 1e-30}) {
    auto host = random_elements(t, n, rng);
    auto dev = test::to_device(host);
    cuda::scale(t, dev.get(), n, factor, nullptr);
    const auto gpu = test::to_host<std::byte>(dev, host.size());
    coll::scale(t, host.data(), n, factor);
    EXPECT_EQ(first_difference(t, gpu, host), -1) << coll::to_string(t) << " factor " << factor;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDtypeAndOp, GpuKernels,
                         ::testing::Combine(::testing::ValuesIn(kDTypes), ::testing::ValuesIn(kOps)),
                         [](const auto& param_info) {
                           return std::string(coll::to_string(std::get<0>(param_info.param))) + "_" +
                                  std::string(coll::to_string(std::get<1>(param_info.param)));
                         });

TEST(GpuConversions, Fp16FastPathEqualsTheSharedCodeOnEveryInput) {
  COLLTUNE_REQUIRE_GPU();
  const test::Mismatches widen = test::f16_to_f32_fast_path_mismatches();
  EXPECT_EQ(widen.count, 0u) << "first fp16 pattern 0x" << std::hex << widen.first;
  const test::Mismatches narrow = test::f32_to_f16_fast_path_mismatches(0, std::uint64_t{1} << 32);
  EXPECT_EQ(narrow.count, 0u) << "first fp32 pattern 0x" << std::hex << narrow.first;
}

// Inputs around the target's overflow threshold, zeros, subnormals, infinities and NaNs with
// payloads, in fp32 and fp64.
template <class F>
std::vector<F> compression_inputs(bool bf16, std::mt19937_64& rng) {
  const double big = bf16 ? 3.4e38 : 65520.0;
  std::vector<F> v;
  std::uniform_real_distribution<double> unit(-1.5, 1.5);
  for (int i = 0; i < 100003; ++i) v.push_back(static_cast<F>(unit(rng) * big));
  for (std::uint32_t h = 0; h < 65536; ++h) {  // every value of the target, widened
    v.push_back(static_cast<F>(bf16 ? coll::bf16_to_f32(static_cast<std::uint16_t>(h))
                                    : coll::f16_to_f32(static_cast<std::uint16_t>(h))));
  }
  v.push_back(std::bit_cast<float>(0x7fa00001u));  // a signalling NaN with a payload
  return v;
}

template <class F>
void check_compress(bool bf16, double prescale, std::mt19937_64& rng) {
  const std::vector<F> in = compression_inputs<F>(bf16, rng);
  const DType target = bf16 ? DType::bf16 : DType::f16;
  const DType source = sizeof(F) == 4 ? DType::f32 : DType::f64;
  std::vector<std::uint16_t> cpu(in.size());
  const coll::OverflowReport want = bf16 ? coll::compress_bf16(in.data(), cpu.data(), in.size(), prescale)
                                         : coll::compress_f16(in.data(), cpu.data(), in.size(), prescale);
  auto din = test::to_device(in);
  cuda::DeviceMemory dout(in.size() * 2), dcounts(sizeof(cuda::DeviceOverflowCounts));
  auto* counts = static_cast<cuda::DeviceOverflowCounts*>(dcounts.get());
  cuda::reset_counts(counts, nullptr);
  cuda::compress(target, source, din.get(), static_cast<std::uint16_t*>(dout.get()), in.size(), prescale, counts,
                 nullptr);
  const coll::OverflowReport got = cuda::read_counts(counts, nullptr);
  const std::string what = std::string(coll::to_string(source)) + "->" + std::string(coll::to_string(target)) +
                           " prescale " + std::to_string(prescale);
  EXPECT_EQ(test::to_host<std::uint16_t>(dout, in.size()), cpu) << what;
  EXPECT_EQ(got.overflowed, want.overflowed) << what;
  EXPECT_EQ(got.first_index, want.first_index) << what;
  EXPECT_EQ(got.nonfinite_inputs, want.nonfinite_inputs) << what;
  if (prescale >= 1.0) {
    EXPECT_GT(want.overflowed, 0u) << what;  // the counts were exercised
  }
}

TEST(GpuCompression, MatchesTheCpuWithOverflowCounts) {
  COLLTUNE_REQUIRE_GPU();
  std::mt19937_64 rng(17);
  for (bool bf16 : {false, true}) {
    for (double prescale : {1.0, 0.5, 3.0}) {
      check_compress<float>(bf16, prescale, rng);
      check_compress<double>(bf16, prescale, rng);
    }
  }
}

TEST(GpuCompression, EveryPatternDecompressesAsOnTheCpu) {
  COLLTUNE_REQUIRE_GPU();
  std::vector<std::uint16_t> h(65536);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint16_t>(i);
  auto dh = test::to_device(h);
  for (DType source : {DType::f16, DType::bf16}) {
    for (double postscale : {1.0, 0.25}) {
      std::vector<float> f(h.size());
      std::vector<double> d(h.size());
      if (source == DType::f16) {
        coll::decompress_f16(h.data(), f.data(), h.size(), postscale);
        coll::decompress_f16(h.data(), d.data(), h.size(), postscale);
      } else {
        coll::decompress_bf16(h.data(), f.data(), h.size(), postscale);
        coll::decompress_bf16(h.data(), d.data(), h.size(), postscale);
      }
      cuda::DeviceMemory df(h.size() * 4), dd(h.size() * 8);
      cuda::decompress(source, DType::f32, static_cast<const std::uint16_t*>(dh.get()), df.get(), h.size(), postscale,
                       nullptr);
      cuda::decompress(source, DType::f64, static_cast<const std::uint16_t*>(dh.get()), dd.get(), h.size(), postscale,
                       nullptr);
      const auto gf = test::to_host<std::byte>(df, h.size() * 4);
      const auto gd = test::to_host<std::byte>(dd, h.size() * 8);
      std::vector<std::byte> cf(gf.size()), cd(gd.size());
      std::memcpy(cf.data(), f.data(), cf.size());
      std::memcpy(cd.data(), d.data(), cd.size());
      // NaNs keep their payload unscaled; scaled, the GPU's multiply returns the canonical NaN.
      EXPECT_EQ(first_difference(DType::f32, gf, cf), -1) << coll::to_string(source) << " " << postscale;
      EXPECT_EQ(first_difference(DType::f64, gd, cd), -1) << coll::to_string(source) << " " << postscale;
      if (postscale == 1.0) {
        EXPECT_EQ(gf, cf) << "unscaled NaN payloads";
      }
    }
  }
}

TEST(GpuCompression, ScanFindsInfinitiesAndNans) {
  COLLTUNE_REQUIRE_GPU();
  std::vector<std::uint16_t> h(100000, 0x3c00);
  h[77] = 0xfc00;
  h[5000] = 0x7c00;
  h[99999] = 0x7e01;
  const coll::OverflowReport want = coll::find_f16_overflow(h.data(), h.size());
  auto dh = test::to_device(h);
  cuda::DeviceMemory dcounts(sizeof(cuda::DeviceOverflowCounts));
  auto* counts = static_cast<cuda::DeviceOverflowCounts*>(dcounts.get());
  cuda::reset_counts(counts, nullptr);
  cuda::scan_specials(DType::f16, static_cast<const std::uint16_t*>(dh.get()), h.size(), counts, nullptr);
  const coll::OverflowReport got = cuda::read_counts(counts, nullptr);
  EXPECT_EQ(got.overflowed, 2u);
  EXPECT_EQ(got.overflowed, want.overflowed);
  EXPECT_EQ(got.first_index, want.first_index);
  EXPECT_EQ(got.nonfinite_inputs, want.nonfinite_inputs);
}

}  // namespace
}  // namespace colltune
