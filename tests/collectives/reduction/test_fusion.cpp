// Tensor fusion: the plan's exact rules, pack/unpack, and a fused allreduce round trip over
// many tensors of mixed sizes and dtypes with a fake allreduce that doubles every element.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "colltune/collectives/fusion.hpp"
#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

std::vector<std::size_t> tensors_of(const FusionBuffer& b) {
  std::vector<std::size_t> out;
  for (const FusionEntry& e : b.entries) out.push_back(e.tensor);
  return out;
}

TEST(FusionPlan, FusesInOrderUpToTheThreshold) {
  // 100 floats = 400 bytes each; offsets 0, 448, 896 with 64-byte alignment.
  const std::vector<FusionTensor> t(5, FusionTensor{100, DType::f32});
  const auto plan = plan_fusion(t, 1296);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(tensors_of(plan[0]), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(plan[0].entries[1].offset_bytes, 448u);
  EXPECT_EQ(plan[0].entries[2].offset_bytes, 896u);
  EXPECT_EQ(plan[0].bytes, 1296u);  // exactly the threshold still fits
  EXPECT_EQ(plan[0].count(), 324u);
  EXPECT_EQ(tensors_of(plan[1]), (std::vector<std::size_t>{3, 4}));
  EXPECT_EQ(plan_fusion(t, 1295).front().entries.size(), 2u);
}

TEST(FusionPlan, ThresholdZeroIsOneTensorPerBuffer) {
  const std::vector<FusionTensor> t = {{1, DType::f32}, {2, DType::f32}, {0, DType::f16}, {3, DType::f32}};
  const auto plan = plan_fusion(t, 0);
  ASSERT_EQ(plan.size(), 4u);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(tensors_of(plan[i]), std::vector<std::size_t>{i});
    EXPECT_EQ(plan[i].entries[0].offset_bytes, 0u);
  }
  EXPECT_EQ(plan[2].bytes, 0u);
}

TEST(FusionPlan, LargeTensorGoesAlone) {
  const std::vector<FusionTensor> t = {{10, DType::f32}, {1000, DType::f32}, {10, DType::f32}, {10, DType::f32}};
  const auto plan = plan_fusion(t, 256);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(tensors_of(plan[0]), std::vector<std::size_t>{0});
  EXPECT_EQ(tensors_of(plan[1]), std::vector<std::size_t>{1});
  EXPECT_EQ(plan[1].bytes, 4000u);
  EXPECT_EQ(tensors_of(plan[2]), (std::vector<std::size_t>{2, 3}));
}

TEST(FusionPlan, OneBufferPerDtypeRun) {
  // Another dtype neither joins nor closes the open buffer: f32 tensors 0, 2, 4 share one.
  const std::vector<FusionTensor> t = {{8, DType::f32}, {8, DType::f16}, {8, DType::f32},
                                       {8, DType::f16}, {8, DType::f32}, {8, DType::i64}};
  const auto plan = plan_fusion(t, 1 << 20);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].dtype, DType::f32);
  EXPECT_EQ(tensors_of(plan[0]), (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(plan[1].dtype, DType::f16);
  EXPECT_EQ(tensors_of(plan[1]), (std::vector<std::size_t>{1, 3}));
  EXPECT_EQ(plan[2].dtype, DType::i64);
  EXPECT_EQ(plan[1].bytes, 64u + 16u);
}

TEST(FusionPlan, AlignmentIsRespectedAndChecked) {
  const std::vector<FusionTensor> t = {{3, DType::f16}, {5, DType::f16}, {1, DType::f16}};
  auto plan = plan_fusion(t, 1000, 16);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].entries[1].offset_bytes, 16u);
  EXPECT_EQ(plan[0].entries[2].offset_bytes, 32u);
  EXPECT_EQ(plan[0].bytes, 34u);
  plan = plan_fusion(t, 1000, 1);
  EXPECT_EQ(plan[0].entries[1].offset_bytes, 6u);
  EXPECT_EQ(plan[0].bytes, 18u);
  EXPECT_THROW(plan_fusion(t, 1000, 0), Error);
  EXPECT_THROW(plan_fusion(t, 1000, 48), Error);
  const std::vector<FusionTensor> huge = {{std::numeric_limits<std::size_t>::max() / 4, DType::f64}};
  EXPECT_THROW(plan_fusion(huge, 1000), Error);
}

// Mixed tensors with values that stay exact when doubled in every dtype.
struct Tensors {
  std::vector<std::vector<unsigned char>> data;
  std::vector<TensorRef> refs;
  std::vector<std::vector<unsigned char>> expected;
};

void put(DType t, unsigned char* p, int v) {
  auto store = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case DType::f32: return store(static_cast<float>(v));
    case DType::f64: return store(static_cast<double>(v));
    case DType::f16: return store(f32_to_f16(static_cast<float>(v)));
    case DType::bf16: return store(f32_to_bf16(static_cast<float>(v)));
    case DType::i32: return store(static_cast<std::int32_t>(v));
    case DType::i64: return store(static_cast<std::int64_t>(v));
  }
}

Tensors make_tensors(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  const DType dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
  Tensors ts;
  ts.data.resize(n);
  ts.expected.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const DType t = dtypes[rng() % 6];
    const std::size_t count = rng() % 8 == 0 ? 0 : (rng() % 4 == 0 ? 2000 + rng() % 3000 : 1 + rng() % 300);
    const std::size_t size = dtype_size(t);
    ts.data[i].resize(count * size);
    ts.expected[i].resize(count * size);
    for (std::size_t k = 0; k < count; ++k) {
      const int v = static_cast<int>(rng() % 100) - 50;
      put(t, ts.data[i].data() + k * size, v);
      put(t, ts.expected[i].data() + k * size, 2 * v);
    }
    ts.refs.push_back(TensorRef{ts.data[i].data(), count, t});
  }
  return ts;
}

TEST(FusedAllreduce, RoundTripMixedTensors) {
  for (std::size_t threshold : {std::size_t{0}, std::size_t{100}, std::size_t{4096}, std::size_t{64} << 20}) {
    Tensors ts = make_tensors(200, static_cast<unsigned>(threshold + 1));
    std::vector<FusionTensor> shapes;
    for (const TensorRef& r : ts.refs) shapes.push_back({r.count, r.dtype});
    const auto plan = plan_fusion(shapes, threshold);
    std::size_t nonempty = 0;
    for (const FusionBuffer& b : plan) nonempty += b.bytes != 0 ? 1 : 0;
    auto doubler = [](void* buf, std::size_t count, DType dtype) {
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf) % dtype_size(dtype), 0u);
      scale(dtype, buf, count, 2.0);  // a fake allreduce: unpacking must put the doubles back
    };
    const std::size_t calls = fused_allreduce(ts.refs, threshold, doubler);
    EXPECT_EQ(calls, nonempty) << "threshold " << threshold;
    for (std::size_t i = 0; i < ts.refs.size(); ++i) ASSERT_EQ(ts.data[i], ts.expected[i]) << "tensor " << i;
  }
}

TEST(FusedAllreduce, PaddingIsZeroAndBuffersAreAligned) {
  std::vector<float> a(3, 1.0f), b(5, 2.0f);
  std::vector<TensorRef> refs = {{a.data(), a.size(), DType::f32}, {b.data(), b.size(), DType::f32}};
  std::size_t calls = 0;
  fused_allreduce(refs, 1024, [&](void* buf, std::size_t count, DType dtype) {
    ++calls;
    EXPECT_EQ(dtype, DType::f32);
    EXPECT_EQ(count, 16u + 5u);  // 64-byte offset for b, then 5 floats
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf) % kFusionAlignment, 0u);
    const auto* f = static_cast<const float*>(buf);
    for (std::size_t i = 3; i < 16; ++i) EXPECT_EQ(f[i], 0.0f) << i;
    EXPECT_EQ(f[16], 2.0f);
  });
  EXPECT_EQ(calls, 1u);
}

TEST(FusedAllreduce, SingleTensorBuffersAreReducedInPlace) {
  std::vector<double> big(1000, 1.0);
  std::vector<TensorRef> refs = {{big.data(), big.size(), DType::f64}};
  void* seen = nullptr;
  fused_allreduce(refs, 16, [&](void* buf, std::size_t, DType) { seen = buf; });
  EXPECT_EQ(seen, big.data());
}

TEST(FusedAllreduce, MismatchedTensorsAreErrors) {
  std::vector<float> a(4), b(4);
  const std::vector<FusionTensor> shapes = {{4, DType::f32}, {4, DType::f32}};
  const auto plan = plan_fusion(shapes, 1024);
  std::vector<unsigned char> staging(plan[0].bytes);
  const std::vector<TensorRef> wrong_count = {{a.data(), 4, DType::f32}, {b.data(), 3, DType::f32}};
  EXPECT_THROW(pack(plan[0], wrong_count, staging.data()), Error);
  const std::vector<TensorRef> wrong_type = {{a.data(), 4, DType::f32}, {b.data(), 4, DType::i32}};
  EXPECT_THROW(unpack(plan[0], staging.data(), wrong_type), Error);
  const std::vector<TensorRef> too_few = {{a.data(), 4, DType::f32}};
  EXPECT_THROW(pack(plan[0], too_few, staging.data()), Error);
  const std::vector<TensorRef> null_data = {{a.data(), 4, DType::f32}, {nullptr, 4, DType::f32}};
  EXPECT_THROW(pack(plan[0], null_data, staging.data()), Error);
  EXPECT_THROW(fused_allreduce(null_data, 1024, AllreduceOne{}), Error);
}

}  // namespace
}  // namespace colltune::coll
