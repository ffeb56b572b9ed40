#pragma once
// Where a communicator's buffers live, and the element-wise work the collective front end
// (allreduce.hpp) does on them besides running the schedule: copying the input, pre- and
// post-scaling, the codec that lands received blocks, and fp16 compression's conversions.
//
// This is what makes one front end serve every transport, as Gloo's allreduce(AllreduceOptions)
// serves its transports: threads and MPI ranks hold host memory (host_memory(): memcpy, the CPU
// reducers and conversions); the `cuda` and `nccl` transports' ranks hold device memory and
// answer with CUDA kernels on the rank's stream (cuda_transport.hpp). The front end's checks,
// schedule choice, scaling rules and statistics are written once (allreduce.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "colltune/collectives/compression.hpp"
#include "colltune/collectives/dtype.hpp"

namespace colltune::coll {

class WireCodec;
enum class Compression;

// Overflow counts of one fp16-compressed allreduce: inputs of this rank that overflowed fp16
// after the prescale, and infinities in the fp16 result (the same on every rank).
struct Fp16Counts {
  OverflowReport input;
  OverflowReport result;
};

// The fp16 copy an fp16-compressed allreduce reduces, in the communicator's memory, with the
// conversions around it. Steps in order: compress, (the allreduce of half()), scan_result,
// decompress, counts.
class Fp16Stage {
 public:
  virtual ~Fp16Stage() = default;
  // The fp16 working buffer (the count given to MemorySpace::fp16_stage).
  virtual std::uint16_t* half() = 0;
  // half = fp16(in x prescale), in of `dtype` (f32 or f64); counts input overflows.
  virtual void compress(const void* in, DType dtype, double prescale) = 0;
  // Counts infinities and NaN in half() after the allreduce.
  virtual void scan_result() = 0;
  // out = dtype(half) x postscale.
  virtual void decompress(void* out, DType dtype, double postscale) = 0;
  // The counts; on a device this waits for the queued work.
  virtual Fp16Counts counts() = 0;
};

class MemorySpace {
 public:
  virtual ~MemorySpace() = default;
  // Copies `bytes` (the ranges do not overlap).
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // data[i] *= factor for `count` elements of `dtype`.
  virtual void scale(DType dtype, void* data, std::size_t count, double factor) = 0;
  // The codec that sends blocks of `dtype` as they are and reduces received ones with `op`.
  virtual std::unique_ptr<WireCodec> codec(DType dtype, ReduceOp op) = 0;
  // fp16 compression's working set for `count` elements.
  virtual std::unique_ptr<Fp16Stage> fp16_stage(std::size_t count) = 0;
  // Why `compression` cannot run in this memory (the front end refuses it before any rank
  // communicates); empty when it can.
  virtual std::string_view refuses(Compression compression) const = 0;
};

// Host memory. Stateless, so one object serves every rank of every host transport.
MemorySpace& host_memory();

}  // namespace colltune::coll
