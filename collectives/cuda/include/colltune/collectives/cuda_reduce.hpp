#pragma once
// CUDA kernels for the GPU side of the executor: elementwise reduction of a received block into
// a device buffer, scaling, and fp16 compression (fp32 <-> fp16 with overflow counting).
// Built only when CUDA is found (target colltune_collectives_cuda); every function runs on the
// given stream and returns without synchronising, except where it says so.
#include <cstddef>
#include <cstdint>

#include "colltune/collectives/dtype.hpp"

namespace colltune::coll::cuda {

// Opaque stream handle (cudaStream_t) so that callers need not include CUDA headers.
using Stream = void*;

// True when a CUDA device is present and usable.
bool device_available();

// inout[i] = inout[i] op in[i] for `count` elements of `dtype` in device memory.
void reduce(DType dtype, ReduceOp op, void* inout, const void* in, std::size_t count, Stream stream);
// inout[i] *= factor, by the same rules as coll::scale (integers: exact division for avg).
void scale(DType dtype, void* inout, std::size_t count, double factor, Stream stream);

// fp32 -> fp16 (round to nearest even) after multiplying by prescale. Counts finite inputs that
// became infinite into *overflow_count (device memory, one uint64, accumulated, not reset).
void compress_f32_to_f16(const float* in, std::uint16_t* out, std::size_t count, float prescale,
                         unsigned long long* overflow_count, Stream stream);
// fp16 -> fp32, multiplied by postscale.
void decompress_f16_to_f32(const std::uint16_t* in, float* out, std::size_t count, float postscale, Stream stream);

// Throws colltune::Error naming the failed CUDA call.
void check_last_error(const char* what);
void synchronize(Stream stream);

}  // namespace colltune::coll::cuda
