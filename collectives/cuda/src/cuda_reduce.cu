// Grid-stride elementwise kernels. One thread handles elements i, i + stride, ...; the grid is
// capped so huge buffers do not create absurd launches. fp16/bf16 reduce in fp32 and round once,
// matching the CPU reducer bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <string>

#include "colltune/collectives/cuda_reduce.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;

unsigned blocks_for(std::size_t count) {
  std::size_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return static_cast<unsigned>(blocks == 0 ? 1 : blocks);
}

cudaStream_t as_stream(Stream s) { return static_cast<cudaStream_t>(s); }

// Arithmetic type a storage type is reduced in.
template <typename T> struct Math { using type = T; };
template <> struct Math<__half> { using type = float; };
template <> struct Math<__nv_bfloat16> { using type = float; };

template <typename T> __device__ typename Math<T>::type load(T v) { return v; }
template <> __device__ float load<__half>(__half v) { return __half2float(v); }
template <> __device__ float load<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ T store(typename Math<T>::type v) { return v; }
template <> __device__ __half store<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 store<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename M> __device__ M combine(ReduceOp op, M a, M b) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return a + b;
    case ReduceOp::prod: return a * b;
    case ReduceOp::min: return b < a ? b : a;
    case ReduceOp::max: return b > a ? b : a;
  }
  return a;
}

template <typename T>
__global__ void reduce_kernel(ReduceOp op, T* __restrict__ inout, const T* __restrict__ in, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    inout[i] = store<T>(combine(op, load(inout[i]), load(in[i])));
  }
}

// Scaling follows the CPU reducer's rules (reducer.hpp), so results match bit for bit:
// fp32 multiplies by the fp32 factor; fp16/bf16 round the exact double product of the value and
// the fp32 factor once; integers divide exactly by d when the factor is 1/d (avg), otherwise
// truncate the double product and saturate.
__global__ void scale_f32_kernel(float* __restrict__ inout, std::size_t count, float factor) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    inout[i] *= factor;
  }
}

__global__ void scale_f64_kernel(double* __restrict__ inout, std::size_t count, double factor) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    inout[i] *= factor;
  }
}

__device__ __half narrow(double v, __half) { return __double2half(v); }
__device__ __nv_bfloat16 narrow(double v, __nv_bfloat16) { return __double2bfloat16(v); }

template <typename T>
__global__ void scale_half_kernel(T* __restrict__ inout, std::size_t count, float factor) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    inout[i] = narrow(static_cast<double>(load(inout[i])) * static_cast<double>(factor), T{});
  }
}

template <typename T>
__device__ T saturate(double x) {
  const double lo = static_cast<double>(::cuda::std::numeric_limits<T>::min());
  const double hi = static_cast<double>(::cuda::std::numeric_limits<T>::max());
  if (isnan(x)) return 0;
  if (x <= lo) return ::cuda::std::numeric_limits<T>::min();
  if (x >= hi) return ::cuda::std::numeric_limits<T>::max();
  return static_cast<T>(x);
}

// divisor: 0 = multiply by factor; -1 = negate with wrap-around; else exact division (the host
// passes 0 for a divisor beyond T's range as "all zero", see launch_scale_int).
template <typename T>
__global__ void scale_int_kernel(T* __restrict__ inout, std::size_t count, long long divisor, double factor,
                                 bool zero) {
  using U = typename ::cuda::std::make_unsigned<T>::type;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (zero) inout[i] = 0;
    else if (divisor == -1) inout[i] = static_cast<T>(U{0} - static_cast<U>(inout[i]));
    else if (divisor != 0) inout[i] = static_cast<T>(inout[i] / static_cast<T>(divisor));
    else inout[i] = saturate<T>(trunc(static_cast<double>(inout[i]) * factor));
  }
}

__global__ void compress_kernel(const float* __restrict__ in, __half* __restrict__ out, std::size_t count,
                                float prescale, unsigned long long* overflow) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float v = in[i] * prescale;
    const __half h = __float2half_rn(v);
    if (isfinite(v) && __hisinf(h)) ++local;
    out[i] = h;
  }
  if (local) atomicAdd(overflow, local);
}

__global__ void decompress_kernel(const __half* __restrict__ in, float* __restrict__ out, std::size_t count,
                                  float postscale) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    out[i] = __half2float(in[i]) * postscale;
  }
}

template <typename T>
void launch_reduce(ReduceOp op, void* inout, const void* in, std::size_t count, Stream s) {
  reduce_kernel<T><<<blocks_for(count), kThreads, 0, as_stream(s)>>>(op, static_cast<T*>(inout),
                                                                      static_cast<const T*>(in), count);
}

template <typename T>
void launch_scale_int(void* inout, std::size_t count, double factor, Stream s) {
  const long long d = inverse_divisor(factor);
  // A divisor that T cannot hold makes every quotient truncate to zero.
  const bool zero = d != 0 && static_cast<long long>(static_cast<T>(d)) != d;
  scale_int_kernel<T><<<blocks_for(count), kThreads, 0, as_stream(s)>>>(static_cast<T*>(inout), count, d, factor,
                                                                        zero);
}

}  // namespace

bool device_available() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return false;
  }
  return n > 0;
}

void check_last_error(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(err));
}

void synchronize(Stream stream) {
  const cudaError_t err = cudaStreamSynchronize(as_stream(stream));
  if (err != cudaSuccess) throw Error(std::string("cudaStreamSynchronize: ") + cudaGetErrorString(err));
}

void reduce(DType dtype, ReduceOp op, void* inout, const void* in, std::size_t count, Stream stream) {
  if (count == 0) return;
  switch (dtype) {
    case DType::f32: launch_reduce<float>(op, inout, in, count, stream); break;
    case DType::f64: launch_reduce<double>(op, inout, in, count, stream); break;
    case DType::f16: launch_reduce<__half>(op, inout, in, count, stream); break;
    case DType::bf16: launch_reduce<__nv_bfloat16>(op, inout, in, count, stream); break;
    case DType::i32: launch_reduce<int>(op, inout, in, count, stream); break;
    case DType::i64: launch_reduce<long long>(op, inout, in, count, stream); break;
  }
  check_last_error("cuda reduce launch");
}

void scale(DType dtype, void* inout, std::size_t count, double factor, Stream stream) {
  if (count == 0 || factor == 1.0) return;
  const unsigned blocks = blocks_for(count);
  const cudaStream_t st = as_stream(stream);
  const auto f32 = static_cast<float>(factor);
  switch (dtype) {
    case DType::f32: scale_f32_kernel<<<blocks, kThreads, 0, st>>>(static_cast<float*>(inout), count, f32); break;
    case DType::f64: scale_f64_kernel<<<blocks, kThreads, 0, st>>>(static_cast<double*>(inout), count, factor); break;
    case DType::f16:
      scale_half_kernel<__half><<<blocks, kThreads, 0, st>>>(static_cast<__half*>(inout), count, f32);
      break;
    case DType::bf16:
      scale_half_kernel<__nv_bfloat16><<<blocks, kThreads, 0, st>>>(static_cast<__nv_bfloat16*>(inout), count, f32);
      break;
    case DType::i32: launch_scale_int<int>(inout, count, factor, stream); break;
    case DType::i64: launch_scale_int<long long>(inout, count, factor, stream); break;
  }
  check_last_error("cuda scale launch");
}

void compress_f32_to_f16(const float* in, std::uint16_t* out, std::size_t count, float prescale,
                         unsigned long long* overflow_count, Stream stream) {
  if (count == 0) return;
  compress_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(in, reinterpret_cast<__half*>(out), count,
                                                                         prescale, overflow_count);
  check_last_error("cuda fp16 compress launch");
}

void decompress_f16_to_f32(const std::uint16_t* in, float* out, std::size_t count, float postscale, Stream stream) {
  if (count == 0) return;
  decompress_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(reinterpret_cast<const __half*>(in), out,
                                                                           count, postscale);
  check_last_error("cuda fp16 decompress launch");
}

}  // namespace colltune::coll::cuda
