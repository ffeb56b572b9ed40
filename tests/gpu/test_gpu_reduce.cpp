// CUDA reducers and fp16 compression against the CPU reducers, bit for bit, on inputs whose
// reduction is exact (small integers). Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "colltune/collectives/cuda_reduce.hpp"
#include "colltune/collectives/element.hpp"
#include "colltune/collectives/reducer.hpp"

namespace coll = colltune::coll;
namespace cuda = colltune::coll::cuda;

namespace {

// Device buffer owning its allocation.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  void upload(const void* host) { ASSERT_EQ(cudaMemcpy(ptr_, host, bytes_, cudaMemcpyHostToDevice), cudaSuccess); }
  void download(void* host) const {
    ASSERT_EQ(cudaMemcpy(host, ptr_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

// Bytes of `count` small integers (1..7) in `dtype`, shifted by `seed` so two inputs differ:
// exact in every dtype, so any reduction order gives the same bits.
std::vector<std::uint8_t> small_integers(coll::DType dtype, std::size_t count, int seed) {
  std::vector<std::uint8_t> bytes(count * coll::dtype_size(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    coll::store_element(dtype, bytes.data(), i, static_cast<double>((i * 3 + static_cast<std::size_t>(seed)) % 7 + 1));
  }
  return bytes;
}

class GpuReduce : public ::testing::TestWithParam<std::tuple<coll::DType, coll::ReduceOp>> {
 protected:
  void SetUp() override {
    if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  }
};

}  // namespace

TEST_P(GpuReduce, MatchesCpuReducerBitForBit) {
  const auto [dtype, op] = GetParam();
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20}) {
    auto a = small_integers(dtype, count, 1);
    const auto b = small_integers(dtype, count, 4);
    DeviceBuffer da(a.size()), db(b.size());
    da.upload(a.data());
    db.upload(b.data());
    cuda::reduce(dtype, op, da.get(), db.get(), count, nullptr);
    cuda::synchronize(nullptr);
    std::vector<std::uint8_t> gpu(a.size());
    da.download(gpu.data());
    coll::reduce(dtype, op, a.data(), b.data(), count);
    EXPECT_EQ(gpu, a) << "count " << count;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GpuReduce,
                         ::testing::Combine(::testing::Values(coll::DType::f32, coll::DType::f64, coll::DType::f16,
                                                              coll::DType::bf16, coll::DType::i32, coll::DType::i64),
                                            ::testing::Values(coll::ReduceOp::sum, coll::ReduceOp::min,
                                                              coll::ReduceOp::max, coll::ReduceOp::prod)));

TEST_P(GpuReduce, ScaleMatchesCpuBitForBit) {
  if (std::get<1>(GetParam()) != coll::ReduceOp::sum) GTEST_SKIP() << "scaling does not depend on the op";
  const coll::DType dtype = std::get<0>(GetParam());
  const std::size_t count = 4097;
  for (double factor : {1.0 / 3.0, 1.0 / 16.0, 0.37, -1.0, 2.5}) {
    auto host = small_integers(dtype, count, 2);
    DeviceBuffer dev(host.size());
    dev.upload(host.data());
    cuda::scale(dtype, dev.get(), count, factor, nullptr);
    cuda::synchronize(nullptr);
    std::vector<std::uint8_t> gpu(host.size());
    dev.download(gpu.data());
    coll::scale(dtype, host.data(), count, factor);
    EXPECT_EQ(gpu, host) << "factor " << factor;
  }
}

TEST(GpuCompression, RoundTripsAndCountsOverflow) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  const std::vector<float> in{1.0f, -2.5f, 65504.0f, 70000.0f, 0.0f, 1e6f};
  DeviceBuffer din(in.size() * 4), dhalf(in.size() * 2), dout(in.size() * 4), dcount(8);
  din.upload(in.data());
  const unsigned long long zero = 0;
  dcount.upload(&zero);
  cuda::compress_f32_to_f16(static_cast<const float*>(din.get()), static_cast<std::uint16_t*>(dhalf.get()), in.size(),
                            1.0f, static_cast<unsigned long long*>(dcount.get()), nullptr);
  cuda::decompress_f16_to_f32(static_cast<const std::uint16_t*>(dhalf.get()), static_cast<float*>(dout.get()),
                              in.size(), 1.0f, nullptr);
  cuda::synchronize(nullptr);
  std::vector<float> out(in.size());
  dout.download(out.data());
  unsigned long long overflow = 0;
  dcount.download(&overflow);
  EXPECT_EQ(overflow, 2u);  // 70000 and 1e6 exceed fp16's 65504
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.5f);
  EXPECT_EQ(out[2], 65504.0f);
  EXPECT_TRUE(std::isinf(out[3]));
}
