// Device memory for the collective front end (memory_space.hpp): the codec that lands blocks
// with the CUDA kernels, copies and scaling on the rank's stream, and fp16 compression in the
// communicator's scratch with its overflow counts on the device. The front end itself is the
// host's (allreduce.cpp): one allreduce for every transport.
#include <cstdint>
#include <string>

#include "colltune/collectives/cuda_transport.hpp"
#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/memory_space.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::cuda {

DeviceCodec::DeviceCodec(DType dtype, ReduceOp op, Stream stream)
    : dtype_(dtype), op_(op), elem_size_(dtype_size(dtype)), stream_(stream) {}

void DeviceCodec::encode(const std::byte* src, std::size_t count, std::byte* wire) const {
  cuda::copy(wire, src, count * elem_size_, stream_);
}

void DeviceCodec::apply(OpKind kind, std::byte* dst, const std::byte* wire, std::size_t count,
                        const std::byte* init) const {
  if (count == 0) return;
  if (kind == OpKind::recv_copy) return cuda::copy(dst, wire, count * elem_size_, stream_);
  // dst = init op wire folds the out-of-place input in with no extra pass over memory.
  cuda::reduce_into(dtype_, op_, dst, init != nullptr ? init : dst, wire, count, stream_);
}

void DeviceCodec::copy(std::byte* dst, const std::byte* src, std::size_t bytes) const {
  cuda::copy(dst, src, bytes, stream_);
}

const DeviceCodec& device_codec(const WireCodec* codec, const DeviceCommunicator& comm) {
  const auto* device = dynamic_cast<const DeviceCodec*>(codec);
  if (device == nullptr || device->stream() != comm.stream()) {
    throw Error(std::string(comm.transport()) + " transport: rank " + std::to_string(comm.rank()) +
                " needs a device codec on its own stream (coll::allreduce gives it one)");
  }
  return *device;
}

namespace {

// Compression::fp16 on the device: the fp16 copy and two sets of counts (input, result) in the
// communicator's scratch; the counts are read, synchronising the stream, only at the end.
class DeviceFp16Stage final : public Fp16Stage {
 public:
  DeviceFp16Stage(DeviceCommunicator& comm, std::size_t count) : stream_(comm.stream()), count_(count) {
    constexpr std::size_t kCountsBytes = 2 * sizeof(DeviceOverflowCounts);
    DeviceMemory& scratch = comm.scratch(kCountsBytes + count * sizeof(std::uint16_t));
    counts_ = reinterpret_cast<DeviceOverflowCounts*>(scratch.bytes());
    half_ = reinterpret_cast<std::uint16_t*>(scratch.bytes() + kCountsBytes);
    reset_counts(counts_, stream_);
    reset_counts(counts_ + 1, stream_);
  }
  std::uint16_t* half() override { return half_; }
  void compress(const void* in, DType dtype, double prescale) override {
    cuda::compress(DType::f16, dtype, in, half_, count_, prescale, counts_, stream_);
  }
  void scan_result() override { scan_specials(DType::f16, half_, count_, counts_ + 1, stream_); }
  void decompress(void* out, DType dtype, double postscale) override {
    cuda::decompress(DType::f16, dtype, half_, out, count_, postscale, stream_);
  }
  Fp16Counts counts() override { return {read_counts(counts_, stream_), read_counts(counts_ + 1, stream_)}; }

 private:
  Stream stream_;
  std::size_t count_;
  DeviceOverflowCounts* counts_ = nullptr;
  std::uint16_t* half_ = nullptr;
};

class DeviceMemorySpace final : public MemorySpace {
 public:
  explicit DeviceMemorySpace(DeviceCommunicator& comm) : comm_(comm) {}
  void copy(void* dst, const void* src, std::size_t bytes) override { cuda::copy(dst, src, bytes, comm_.stream()); }
  void scale(DType dtype, void* data, std::size_t count, double factor) override {
    cuda::scale(dtype, data, count, factor, comm_.stream());
  }
  std::unique_ptr<WireCodec> codec(DType dtype, ReduceOp op) override {
    return std::make_unique<DeviceCodec>(dtype, op, comm_.stream());
  }
  std::unique_ptr<Fp16Stage> fp16_stage(std::size_t count) override {
    return std::make_unique<DeviceFp16Stage>(comm_, count);
  }
  std::string_view refuses(Compression compression) const override {
    return compression == Compression::fp16_fp32acc ? "not supported on GPUs; use fp16" : "";
  }

 private:
  DeviceCommunicator& comm_;
};

}  // namespace

MemorySpace& DeviceCommunicator::memory() {
  if (!memory_) memory_ = std::make_unique<DeviceMemorySpace>(*this);
  return *memory_;
}

double allreduce_scalar(DeviceCommunicator& comm, double value, ReduceOp op, double timeout_s) {
  DeviceMemory& scratch = comm.scratch(sizeof(double));
  scratch.upload(&value, sizeof value, comm.stream());
  AllreduceOptions o;
  o.dtype = DType::f64;
  o.op = op;
  o.timeout_s = timeout_s;
  coll::allreduce(comm, scratch.get(), scratch.get(), 1, o);
  synchronize(comm.stream(), timeout_s, "rank " + std::to_string(comm.rank()));
  double result = 0;
  scratch.download(&result, sizeof result, comm.stream());
  return result;
}

}  // namespace colltune::coll::cuda
