#pragma once
// CUDA kernels for the device side of the executor: elementwise reduction of a received block
// into a device buffer, scaling, and fp16/bf16 compression with overflow counting. Built only
// when CUDA is found (target colltune_collectives_cuda).
//
// The arithmetic is element_math.hpp's, the same code the CPU reducers run, so results match
// the CPU bit for bit for every dtype and op (on NaN-free inputs: a NaN result is a NaN on
// both, but the GPU's arithmetic returns the canonical NaN where the CPU keeps a payload). The
// one exception is the fp16 <-> fp32 conversion: the kernels use the hardware instruction,
// which rounds like half.hpp's code (to nearest even, subnormals kept), and half.hpp's NaN
// helpers for NaNs, so they agree on every input (test_gpu_kernels checks every pattern).
//
// Every function here runs on the given stream and returns without synchronising, except
// where it says so. No CUDA header is needed to include this one (streams are opaque).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "colltune/collectives/compression.hpp"
#include "colltune/collectives/dtype.hpp"

namespace colltune::coll::cuda {

// Opaque stream handle (cudaStream_t); nullptr is the legacy default stream.
using Stream = void*;

// ---- devices ---------------------------------------------------------------------------------

// Number of usable CUDA devices; 0 when there is none or no driver (never throws).
int device_count();
bool device_available();
// "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)" for device `device`.
std::string device_description(int device);
// Throws colltune::Error "<who>: no CUDA device (...)" naming the reason when device_count() is 0.
void require_device(std::string_view who);
// Free memory of the calling thread's current device, in bytes.
std::size_t device_free_bytes();

// ---- elementwise kernels ---------------------------------------------------------------------

// inout[i] = inout[i] op in[i] for `count` elements of `dtype` in device memory.
void reduce(DType dtype, ReduceOp op, void* inout, const void* in, std::size_t count, Stream stream);
// out[i] = a[i] op b[i]; out may equal a or b (then it is the in-place reduce), otherwise no
// overlap.
void reduce_into(DType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count,
                 Stream stream);
// inout[i] *= factor, by the same rules as coll::scale (integers: exact division for avg).
void scale(DType dtype, void* inout, std::size_t count, double factor, Stream stream);
// Device-to-device copy of `bytes` (cudaMemcpyAsync).
void copy(void* dst, const void* src, std::size_t bytes, Stream stream);

// ---- compression -----------------------------------------------------------------------------

// Counts a compression kernel accumulates in device memory (reset_counts before use).
struct DeviceOverflowCounts {
  unsigned long long overflowed = 0;        // finite inputs that became +-inf
  unsigned long long nonfinite_inputs = 0;  // inputs already inf/NaN
  unsigned long long first_index = ~0ull;   // smallest overflowing index, ~0 when none
};

// out[i] = narrow(in[i] * prescale) for target f16 or bf16 and source f32 or f64, as
// coll::compress_f16/compress_bf16 on the CPU (bit for bit, overflow counts included). `counts`
// is device memory; counts accumulate.
void compress(DType target, DType source, const void* in, std::uint16_t* out, std::size_t count, double prescale,
              DeviceOverflowCounts* counts, Stream stream);
// out[i] = widen(in[i]) * postscale (source f16 or bf16, target f32 or f64), as
// coll::decompress_f16/decompress_bf16.
void decompress(DType source, DType target, const std::uint16_t* in, void* out, std::size_t count, double postscale,
                Stream stream);
// Counts +-inf (as overflowed, first index) and NaN (as nonfinite) in an f16/bf16 buffer, as
// coll::find_f16_overflow.
void scan_specials(DType format, const std::uint16_t* buf, std::size_t count, DeviceOverflowCounts* counts,
                   Stream stream);
void reset_counts(DeviceOverflowCounts* counts, Stream stream);
// Synchronises the stream and reads the counts back.
OverflowReport read_counts(const DeviceOverflowCounts* counts, Stream stream);

// ---- errors and waiting ----------------------------------------------------------------------

// Throws colltune::Error naming `what` and the CUDA error when the last launch failed.
void check_last_error(const char* what);
// Throws colltune::Error naming `what` and the CUDA error unless `status` (a cudaError_t) is 0.
void check(int status, std::string_view what);
void synchronize(Stream stream);
// Waits for the stream's work, polling, at most timeout_s; TimeoutError naming `who` after.
void synchronize(Stream stream, double timeout_s, std::string_view who);

}  // namespace colltune::coll::cuda
