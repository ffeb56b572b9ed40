// fp16/bf16 compression kernels with overflow counting, as compression.cpp does on the CPU:
// out[i] = narrow(in[i] * prescale); a finite input whose result is +-inf is an overflow (the
// count and the first index are kept), an inf/NaN input is counted as non-finite. Each thread
// counts in registers and adds to the device counters once, only when it found something.
//
// A NaN input is not multiplied: the GPU's multiply would return the canonical NaN, while the
// CPU keeps the payload, and narrowing it must give the same bits on both.
#include <string>

#include "colltune/common/error.hpp"
#include "kernel_common.cuh"

namespace colltune::coll::cuda {
namespace {

using detail::grid_size;
using detail::thread_index;

template <class F>
__device__ bool finite_value(F x) {
  return isfinite(x);
}

// Narrowing per target: fp16 from fp32 in hardware (kernel_common.cuh), the rest with the
// shared half.hpp code.
template <bool ToBf16, class F>
__device__ std::uint16_t narrow(F x) {
  if constexpr (ToBf16) {
    if constexpr (sizeof(F) == 4) return f32_to_bf16(x);
    else return f64_to_bf16(x);
  } else {
    if constexpr (sizeof(F) == 4) return detail::HwF16::store(x);
    else return f64_to_f16(x);
  }
}

template <bool FromBf16>
__device__ float widen(std::uint16_t h) {
  if constexpr (FromBf16) return bf16_to_f32(h);
  else return detail::HwF16::load(h);
}

template <bool Bf16>
__device__ bool is_inf16(std::uint16_t h) {
  return (h & 0x7fffu) == (Bf16 ? 0x7f80u : 0x7c00u);
}

__device__ void add_counts(DeviceOverflowCounts* counts, unsigned long long over, unsigned long long nonfinite,
                           unsigned long long first) {
  if (over != 0) {
    atomicAdd(&counts->overflowed, over);
    atomicMin(&counts->first_index, first);
  }
  if (nonfinite != 0) atomicAdd(&counts->nonfinite_inputs, nonfinite);
}

template <bool ToBf16, class F>
__global__ void compress_kernel(const F* __restrict__ in, std::uint16_t* __restrict__ out, std::size_t count,
                                F prescale, bool scaled, DeviceOverflowCounts* counts) {
  unsigned long long over = 0, nonfinite = 0, first = ~0ull;
  for (std::size_t i = thread_index(); i < count; i += grid_size()) {
    const F x = in[i];
    const bool finite = finite_value(x);
    const std::uint16_t h = narrow<ToBf16>(scaled && x == x ? x * prescale : x);
    out[i] = h;
    if (finite && is_inf16<ToBf16>(h)) {
      first = over == 0 ? i : first;  // grid-stride: a thread's indices only grow
      ++over;
    }
    nonfinite += finite ? 0 : 1;
  }
  add_counts(counts, over, nonfinite, first);
}

template <bool FromBf16, class F>
__global__ void decompress_kernel(const std::uint16_t* __restrict__ in, F* __restrict__ out, std::size_t count,
                                  F postscale, bool scaled) {
  for (std::size_t i = thread_index(); i < count; i += grid_size()) {
    const F x = static_cast<F>(widen<FromBf16>(in[i]));
    out[i] = scaled ? x * postscale : x;
  }
}

template <bool Bf16>
__global__ void scan_kernel(const std::uint16_t* __restrict__ buf, std::size_t count, DeviceOverflowCounts* counts) {
  unsigned long long inf = 0, nan = 0, first = ~0ull;
  for (std::size_t i = thread_index(); i < count; i += grid_size()) {
    const std::uint16_t h = buf[i];
    if (is_inf16<Bf16>(h)) {
      first = inf == 0 ? i : first;
      ++inf;
    }
    nan += (h & 0x7fffu) > (Bf16 ? 0x7f80u : 0x7c00u) ? 1 : 0;
  }
  add_counts(counts, inf, nan, first);
}

bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }
bool is_wide_float(DType t) { return t == DType::f32 || t == DType::f64; }

void check_types(DType half, DType wide, const char* what) {
  if (!is_half(half) || !is_wide_float(wide)) {
    throw Error(std::string(what) + ": converts between fp16/bf16 and fp32/fp64, not " +
                std::string(to_string(half)) + " and " + std::string(to_string(wide)));
  }
}

template <class F>
void launch_compress(bool bf16, const void* in, std::uint16_t* out, std::size_t count, double prescale,
                     DeviceOverflowCounts* counts, cudaStream_t st) {
  const auto* src = static_cast<const F*>(in);
  const auto p = static_cast<F>(prescale);
  const bool scaled = prescale != 1.0;
  const unsigned blocks = detail::grid_for(count);
  if (bf16) {
    compress_kernel<true, F><<<blocks, detail::kThreads, 0, st>>>(src, out, count, p, scaled, counts);
  } else {
    compress_kernel<false, F><<<blocks, detail::kThreads, 0, st>>>(src, out, count, p, scaled, counts);
  }
}

template <class F>
void launch_decompress(bool bf16, const std::uint16_t* in, void* out, std::size_t count, double postscale,
                       cudaStream_t st) {
  auto* dst = static_cast<F*>(out);
  const auto p = static_cast<F>(postscale);
  const bool scaled = postscale != 1.0;
  const unsigned blocks = detail::grid_for(count);
  if (bf16) {
    decompress_kernel<true, F><<<blocks, detail::kThreads, 0, st>>>(in, dst, count, p, scaled);
  } else {
    decompress_kernel<false, F><<<blocks, detail::kThreads, 0, st>>>(in, dst, count, p, scaled);
  }
}

}  // namespace

void compress(DType target, DType source, const void* in, std::uint16_t* out, std::size_t count, double prescale,
              DeviceOverflowCounts* counts, Stream stream) {
  check_types(target, source, "cuda compress");
  if (count == 0) return;
  if (in == nullptr || out == nullptr || counts == nullptr) throw Error("cuda compress: null pointer");
  const cudaStream_t st = detail::as_stream(stream);
  const bool bf16 = target == DType::bf16;
  if (source == DType::f32) {
    launch_compress<float>(bf16, in, out, count, prescale, counts, st);
  } else {
    launch_compress<double>(bf16, in, out, count, prescale, counts, st);
  }
  check_last_error("cuda compress launch");
}

void decompress(DType source, DType target, const std::uint16_t* in, void* out, std::size_t count, double postscale,
                Stream stream) {
  check_types(source, target, "cuda decompress");
  if (count == 0) return;
  if (in == nullptr || out == nullptr) throw Error("cuda decompress: null pointer");
  const cudaStream_t st = detail::as_stream(stream);
  const bool bf16 = source == DType::bf16;
  if (target == DType::f32) {
    launch_decompress<float>(bf16, in, out, count, postscale, st);
  } else {
    launch_decompress<double>(bf16, in, out, count, postscale, st);
  }
  check_last_error("cuda decompress launch");
}

void scan_specials(DType format, const std::uint16_t* buf, std::size_t count, DeviceOverflowCounts* counts,
                   Stream stream) {
  if (!is_half(format)) throw Error("cuda scan: fp16 or bf16 buffers only, not " + std::string(to_string(format)));
  if (count == 0) return;
  const unsigned blocks = detail::grid_for(count);
  const cudaStream_t st = detail::as_stream(stream);
  if (format == DType::bf16) {
    scan_kernel<true><<<blocks, detail::kThreads, 0, st>>>(buf, count, counts);
  } else {
    scan_kernel<false><<<blocks, detail::kThreads, 0, st>>>(buf, count, counts);
  }
  check_last_error("cuda scan launch");
}

void reset_counts(DeviceOverflowCounts* counts, Stream stream) {
  const DeviceOverflowCounts zero;
  check(cudaMemcpyAsync(counts, &zero, sizeof zero, cudaMemcpyHostToDevice, detail::as_stream(stream)),
        "cudaMemcpyAsync (reset counts)");
  synchronize(stream);  // `zero` lives on this stack frame
}

OverflowReport read_counts(const DeviceOverflowCounts* counts, Stream stream) {
  DeviceOverflowCounts host;
  check(cudaMemcpyAsync(&host, counts, sizeof host, cudaMemcpyDeviceToHost, detail::as_stream(stream)),
        "cudaMemcpyAsync (read counts)");
  synchronize(stream);
  OverflowReport r;
  r.overflowed = static_cast<std::size_t>(host.overflowed);
  r.nonfinite_inputs = static_cast<std::size_t>(host.nonfinite_inputs);
  r.first_index = host.overflowed == 0 ? OverflowReport::npos : static_cast<std::size_t>(host.first_index);
  return r;
}

}  // namespace colltune::coll::cuda
