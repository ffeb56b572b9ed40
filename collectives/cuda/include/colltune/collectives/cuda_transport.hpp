#pragma once
// Collectives on GPU buffers, and the `cuda` transport: every rank of a schedule on one GPU.
//
// How the device transports plug into the executor and the front end: they reuse both
// unchanged. The executor (executor.hpp) walks one rank's steps and hands each to a
// Communicator; the WireCodec decides how blocks are copied and reduced. A DeviceCommunicator is
// a Communicator whose buffers are device memory and which owns a CUDA stream; its memory()
// (memory_space.hpp) gives coll::allreduce a DeviceCodec, which copies and reduces with CUDA
// kernels on that stream, and does the front end's copies, scaling and fp16 compression there.
// So the allreduce front end, out-of-place execution, scratch for overlapping receives and the
// schedule cache are shared with the CPU transports, and only the byte movement differs:
// - `cuda` (virtual ranks, this file): one host thread per rank, as the threads transport, but
//   each rank's buffers live on the GPU. A send publishes a device pointer and an event recorded
//   on the sender's stream when its step began; the receiver's stream waits for that event and
//   reduces or copies straight from the sender's memory with the kernels, then records the
//   sender's "consumed" event; the sender's step ends when its stream has waited for all of
//   those. This is the threads transport's rendezvous, with the ordering carried by events on
//   the device rather than by the host: the host never waits for the GPU inside a step.
// - `nccl` (nccl_transport.hpp): one rank per GPU, each step one ncclGroupStart/End of
//   ncclSend/ncclRecv on the rank's stream, then the same kernels.
// Both keep the schedule's semantics (schedule.hpp): sends read the buffer as the step began,
// receives land when it ends, and a receive that overlaps a send of its step goes to scratch.
#include <cstddef>
#include <functional>
#include <memory>

#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/communicator.hpp"
#include "colltune/collectives/cuda_memory.hpp"
#include "colltune/collectives/cuda_reduce.hpp"
#include "colltune/collectives/memory_space.hpp"

namespace colltune::coll::cuda {

// A rank whose buffers are device memory on device(), worked on in stream() order. Its
// barrier() also waits (with the timeout) for the rank's queued device work.
class DeviceCommunicator : public Communicator {
 public:
  virtual Stream stream() const = 0;
  virtual int device() const = 0;
  // Device scratch for the front end (compression buffers, scalars), grown stream-ordered.
  DeviceMemory& scratch(std::size_t bytes) {
    scratch_.reserve(bytes, stream());
    return scratch_;
  }
  // Device memory on stream(): cuda::copy and cuda::scale, a DeviceCodec, fp16 compression with
  // the kernels (overflow counts as on the CPU); fp16_fp32acc is refused.
  MemorySpace& memory() override;

 private:
  DeviceMemory scratch_;
  std::unique_ptr<MemorySpace> memory_;
};

// Blocks of device memory on the wire as they are; receives reduce with cuda::reduce_into and
// copy with cudaMemcpyAsync, on `stream`. The device counterpart of PlainCodec.
class DeviceCodec final : public WireCodec {
 public:
  DeviceCodec(DType dtype, ReduceOp op, Stream stream);
  std::size_t wire_elem_size() const override { return elem_size_; }
  bool encodes() const override { return false; }
  void encode(const std::byte* src, std::size_t count, std::byte* wire) const override;
  void apply(OpKind kind, std::byte* dst, const std::byte* wire, std::size_t count,
             const std::byte* init = nullptr) const override;
  void copy(std::byte* dst, const std::byte* src, std::size_t bytes) const override;
  Stream stream() const { return stream_; }

 private:
  DType dtype_;
  ReduceOp op_;
  std::size_t elem_size_;
  Stream stream_;
};

// Throws colltune::Error unless `codec` is a DeviceCodec working on `comm`'s stream: device
// transports cannot land bytes with a host codec.
const DeviceCodec& device_codec(const WireCodec* codec, const DeviceCommunicator& comm);

// The `cuda` transport: runs fn(comm) for each of layout.nranks() virtual ranks, each on its own
// host thread and stream, all on CUDA device `device`. As run_threads: if a rank throws, every
// other rank's waits end promptly, all threads are joined, and the first exception is rethrown.
// Throws colltune::Error "cuda transport: no CUDA device (...)" without a device.
void run_virtual_ranks(const RankLayout& layout, const std::function<void(DeviceCommunicator&)>& fn, int device = 0);

// Collectives on device buffers are coll::allreduce, reduce_scatter and allgather
// (allreduce.hpp) over a DeviceCommunicator: they return when the work is queued on
// comm.stream(), except fp16 compression, which synchronises the stream to read the overflow
// counts.

// `value` reduced over all ranks with `op` (ring over a one-element fp64 device buffer);
// synchronises. For aggregating per-rank measurements.
double allreduce_scalar(DeviceCommunicator& comm, double value, ReduceOp op, double timeout_s);

}  // namespace colltune::coll::cuda
