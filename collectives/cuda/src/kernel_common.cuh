#pragma once
// What the CUDA kernel files share: launch geometry, stream casts, and the device form of the
// element math's codecs.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "colltune/collectives/cuda_reduce.hpp"
#include "colltune/collectives/element_math.hpp"

namespace colltune::coll::cuda::detail {

inline constexpr int kThreads = 256;

inline cudaStream_t as_stream(Stream s) { return static_cast<cudaStream_t>(s); }

// Blocks for a grid-stride loop over `items`: enough to fill every SM (8 blocks of 256 threads
// = 2048 resident threads per SM), never more than the items need. Memory-bound kernels need
// no more: each thread keeps its loads in flight while the others wait.
unsigned grid_for(std::size_t items);

// Index of this thread in the grid, and the grid's size, as size_t (no 32-bit overflow).
__device__ inline std::size_t thread_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_size() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// fp16 on the device: the hardware conversion instruction for numbers (round to nearest even,
// subnormals kept: the same bits as half.hpp's f32_to_f16/f16_to_f32) and half.hpp's NaN
// helpers for NaNs, whose payload handling the instruction does not promise. The portable
// code is several times more instructions per element, enough to make an fp16 reduction
// compute-bound on a GPU; test_gpu_kernels checks the two agree on every fp16 and fp32 pattern.
struct HwF16 {
  using Stored = std::uint16_t;
  using Compute = float;
  __device__ static float load(std::uint16_t h) {
    return (h & 0x7fffu) > 0x7c00u ? f16_nan_to_f32(h) : __half2float(__ushort_as_half(h));
  }
  __device__ static std::uint16_t store(float x) {
    return x != x ? f32_nan_to_f16(x) : __half_as_ushort(__float2half_rn(x));
  }
};

// The codec a kernel uses for element_math's codec C: HwF16 for fp16, C itself otherwise.
template <class C>
struct Device {
  using type = C;
};
template <>
struct Device<element::F16> {
  using type = HwF16;
};
template <class C>
using DeviceCodec = typename Device<C>::type;

// One element: a op b, as element::combine<C, O> with the device codec.
template <class C, class O>
__device__ inline typename C::Stored combine(typename C::Stored a, typename C::Stored b) {
  using D = DeviceCodec<C>;
  return D::store(O{}(D::load(a), D::load(b)));
}

}  // namespace colltune::coll::cuda::detail
