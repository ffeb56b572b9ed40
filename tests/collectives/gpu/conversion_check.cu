// Device-side checks of the fp16 fast path (kernel_common.cuh's HwF16: the hardware conversion
// instruction plus half.hpp's NaN helpers) against half.hpp's portable code run on the same
// device, over every fp32 bit pattern and every fp16 pattern.
#include <cuda_runtime.h>

#include <cstdint>

#include "conversion_check.hpp"
#include "kernel_common.cuh"

namespace colltune::test {
namespace {

__global__ void narrow_mismatches(std::uint64_t begin, std::uint64_t end, unsigned long long* count,
                                  unsigned long long* first) {
  unsigned long long local = 0;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t u = begin + static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < end; u += stride) {
    const float x = coll::bit_cast<float>(static_cast<std::uint32_t>(u));
    if (coll::cuda::detail::HwF16::store(x) != coll::f32_to_f16(x)) {
      if (local == 0) atomicMin(first, static_cast<unsigned long long>(u));
      ++local;
    }
  }
  if (local != 0) atomicAdd(count, local);
}

__global__ void widen_mismatches(unsigned long long* count, unsigned long long* first) {
  for (std::uint32_t h = blockIdx.x * blockDim.x + threadIdx.x; h < 65536; h += gridDim.x * blockDim.x) {
    const auto b = static_cast<std::uint16_t>(h);
    const std::uint32_t fast = coll::bit_cast<std::uint32_t>(coll::cuda::detail::HwF16::load(b));
    if (fast != coll::bit_cast<std::uint32_t>(coll::f16_to_f32(b))) {
      atomicAdd(count, 1ull);
      atomicMin(first, static_cast<unsigned long long>(h));
    }
  }
}

Mismatches read_back(unsigned long long* d) {
  unsigned long long h[2] = {0, 0};
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  return Mismatches{h[0], h[1]};
}

unsigned long long* fresh_counters() {
  unsigned long long* d = nullptr;
  const unsigned long long init[2] = {0, ~0ull};
  cudaMalloc(&d, sizeof init);
  cudaMemcpy(d, init, sizeof init, cudaMemcpyHostToDevice);
  return d;
}

}  // namespace

Mismatches f32_to_f16_fast_path_mismatches(std::uint64_t begin, std::uint64_t end) {
  unsigned long long* d = fresh_counters();
  narrow_mismatches<<<4096, 256>>>(begin, end, d, d + 1);
  cudaDeviceSynchronize();
  return read_back(d);
}

Mismatches f16_to_f32_fast_path_mismatches() {
  unsigned long long* d = fresh_counters();
  widen_mismatches<<<256, 256>>>(d, d + 1);
  cudaDeviceSynchronize();
  return read_back(d);
}

}  // namespace colltune::test
