// Reduction and scaling kernels: element_math.hpp's per-element code (kernel_common.cuh for
// fp16's hardware conversion) in grid-stride loops.
//
// reduce_into reads and writes 16-byte vectors (4 fp32, 8 fp16/bf16, 2 fp64...) when the three
// pointers share their alignment modulo 16: the threads first do the few elements before the
// first 16-byte boundary, then whole vectors in a grid-stride loop, then the tail. Otherwise
// (blocks at unrelated offsets) every element goes through the scalar grid-stride loop.
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <string>

#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"
#include "kernel_common.cuh"

namespace colltune::coll::cuda {
namespace {

using detail::grid_size;
using detail::thread_index;

constexpr std::size_t kVecBytes = 16;

// How a reduction of `count` elements of `elem` bytes splits into a scalar head, 16-byte
// vectors and a scalar tail; all scalar when the pointers are not equally aligned.
struct VectorSplit {
  std::size_t head = 0;  // elements before the first vector
  std::size_t nvec = 0;  // 16-byte vectors
  std::size_t tail = 0;  // elements after the last vector (grid-stride)
};

VectorSplit split_for(const void* out, const void* a, const void* b, std::size_t count, std::size_t elem) {
  const auto o = reinterpret_cast<std::uintptr_t>(out);
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  VectorSplit s;
  if ((o - x) % kVecBytes != 0 || (o - y) % kVecBytes != 0 || o % elem != 0) {
    s.tail = count;
    return s;
  }
  s.head = ((kVecBytes - o % kVecBytes) % kVecBytes) / elem;
  if (s.head > count) s.head = count;
  s.nvec = (count - s.head) * elem / kVecBytes;
  s.tail = count - s.head - s.nvec * (kVecBytes / elem);
  return s;
}

template <class S>
union Vec {
  uint4 raw;
  S e[kVecBytes / sizeof(S)];
};

// out = a op b. No __restrict__: out may be a (in place); each step loads before it stores.
template <class C, class O>
__global__ void reduce_kernel(typename C::Stored* out, const typename C::Stored* a, const typename C::Stored* b,
                              VectorSplit split) {
  using S = typename C::Stored;
  constexpr std::size_t kPer = kVecBytes / sizeof(S);
  const std::size_t tid = thread_index();
  const std::size_t stride = grid_size();
  if (tid < split.head) out[tid] = detail::combine<C, O>(a[tid], b[tid]);
  const auto* av = reinterpret_cast<const uint4*>(a + split.head);
  const auto* bv = reinterpret_cast<const uint4*>(b + split.head);
  auto* ov = reinterpret_cast<uint4*>(out + split.head);
  for (std::size_t v = tid; v < split.nvec; v += stride) {
    Vec<S> x, y, r;
    x.raw = av[v];
    y.raw = bv[v];
#pragma unroll
    for (std::size_t k = 0; k < kPer; ++k) r.e[k] = detail::combine<C, O>(x.e[k], y.e[k]);
    ov[v] = r.raw;
  }
  const std::size_t tail_begin = split.head + split.nvec * kPer;
  for (std::size_t i = tail_begin + tid; i < tail_begin + split.tail; i += stride) {
    out[i] = detail::combine<C, O>(a[i], b[i]);
  }
}

template <class C, class O>
void launch_reduce(void* out, const void* a, const void* b, std::size_t count, Stream stream) {
  using S = typename C::Stored;
  const VectorSplit split = split_for(out, a, b, count, sizeof(S));
  const std::size_t items = split.nvec + split.tail + split.head;
  reduce_kernel<C, O><<<detail::grid_for(items), detail::kThreads, 0, detail::as_stream(stream)>>>(
      static_cast<S*>(out), static_cast<const S*>(a), static_cast<const S*>(b), split);
}

// ---- scale: the rules of coll::scale (scale.cpp), so results match bit for bit ------------------

__global__ void scale_f32_kernel(float* inout, std::size_t count, float factor) {
  for (std::size_t i = thread_index(); i < count; i += grid_size()) inout[i] *= factor;
}

__global__ void scale_f64_kernel(double* inout, std::size_t count, double factor) {
  for (std::size_t i = thread_index(); i < count; i += grid_size()) inout[i] *= factor;
}

// fp16/bf16: the 11- or 8-bit value times the fp32 factor is exact in double, rounded once
// (half.hpp's f64_to_f16/f64_to_bf16, the shared code).
template <class C>
__global__ void scale_half_kernel(std::uint16_t* inout, std::size_t count, float factor) {
  for (std::size_t i = thread_index(); i < count; i += grid_size()) {
    const double x = static_cast<double>(detail::DeviceCodec<C>::load(inout[i])) * static_cast<double>(factor);
    if constexpr (::cuda::std::is_same_v<C, element::F16>) {
      inout[i] = f64_to_f16(x);
    } else {
      inout[i] = f64_to_bf16(x);
    }
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

// divisor: 0 = multiply by factor and truncate; -1 = negate with wrap-around; else exact
// division. zero: the divisor is beyond T, every quotient is 0.
template <typename T>
__global__ void scale_int_kernel(T* inout, std::size_t count, long long divisor, double factor, bool zero) {
  using U = typename ::cuda::std::make_unsigned<T>::type;
  for (std::size_t i = thread_index(); i < count; i += grid_size()) {
    if (zero) inout[i] = 0;
    else if (divisor == -1) inout[i] = static_cast<T>(U{0} - static_cast<U>(inout[i]));
    else if (divisor != 0) inout[i] = static_cast<T>(inout[i] / static_cast<T>(divisor));
    else inout[i] = saturate<T>(trunc(static_cast<double>(inout[i]) * factor));
  }
}

template <typename T>
void launch_scale_int(void* inout, std::size_t count, double factor, Stream stream) {
  const long long d = inverse_divisor(factor);
  const bool zero = d != 0 && static_cast<long long>(static_cast<T>(d)) != d;
  scale_int_kernel<T><<<detail::grid_for(count), detail::kThreads, 0, detail::as_stream(stream)>>>(
      static_cast<T*>(inout), count, d, factor, zero);
}

void check_op(ReduceOp op, const char* what) {
  if (static_cast<int>(op) < 0 || static_cast<int>(op) > static_cast<int>(ReduceOp::prod)) {
    throw Error(std::string(what) + ": unknown reduce op value " + std::to_string(static_cast<int>(op)));
  }
}

}  // namespace

unsigned detail::grid_for(std::size_t items) {
  static const int sms = [] {
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      cudaGetLastError();
      return 1;
    }
    return n;
  }();
  const std::size_t needed = (items + kThreads - 1) / kThreads;
  const std::size_t full = static_cast<std::size_t>(sms) * (2048 / kThreads);
  const std::size_t blocks = needed < full ? needed : full;
  return static_cast<unsigned>(blocks == 0 ? 1 : blocks);
}

void reduce_into(DType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count,
                 Stream stream) {
  check_op(op, "cuda reduce");
  if (count == 0) return;
  if (out == nullptr || a == nullptr || b == nullptr) {
    throw Error("cuda reduce: null buffer for " + std::to_string(count) + " elements");
  }
  const bool known = element::with_codec(dtype, [&]<class C>() {
    element::with_op(op, [&]<class O>() { launch_reduce<C, O>(out, a, b, count, stream); });
  });
  if (!known) throw Error("cuda reduce: unknown dtype value " + std::to_string(static_cast<int>(dtype)));
  check_last_error("cuda reduce launch");
}

void reduce(DType dtype, ReduceOp op, void* inout, const void* in, std::size_t count, Stream stream) {
  reduce_into(dtype, op, inout, inout, in, count, stream);
}

void scale(DType dtype, void* inout, std::size_t count, double factor, Stream stream) {
  if (count == 0 || factor == 1.0) return;
  if (inout == nullptr) throw Error("cuda scale: null buffer for " + std::to_string(count) + " elements");
  const unsigned blocks = detail::grid_for(count);
  const cudaStream_t st = detail::as_stream(stream);
  const auto f32 = static_cast<float>(factor);
  auto* h = static_cast<std::uint16_t*>(inout);
  switch (dtype) {
    case DType::f32: scale_f32_kernel<<<blocks, detail::kThreads, 0, st>>>(static_cast<float*>(inout), count, f32); break;
    case DType::f64: scale_f64_kernel<<<blocks, detail::kThreads, 0, st>>>(static_cast<double*>(inout), count, factor); break;
    case DType::f16: scale_half_kernel<element::F16><<<blocks, detail::kThreads, 0, st>>>(h, count, f32); break;
    case DType::bf16: scale_half_kernel<element::BF16><<<blocks, detail::kThreads, 0, st>>>(h, count, f32); break;
    case DType::i32: launch_scale_int<std::int32_t>(inout, count, factor, stream); break;
    case DType::i64: launch_scale_int<std::int64_t>(inout, count, factor, stream); break;
    default: throw Error("cuda scale: unknown dtype value " + std::to_string(static_cast<int>(dtype)));
  }
  check_last_error("cuda scale launch");
}

void copy(void* dst, const void* src, std::size_t bytes, Stream stream) {
  if (bytes == 0 || dst == src) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, detail::as_stream(stream)), "cudaMemcpyAsync");
}

}  // namespace colltune::coll::cuda
