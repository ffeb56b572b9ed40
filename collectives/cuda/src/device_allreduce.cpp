// The device codec and the allreduce front end on device buffers (cuda_transport.hpp). The
// steps mirror the host front end (allreduce.cpp): prescale on a copy, execute the cached
// schedule with the codec, post-scale (avg adds 1/p); with fp16 compression the buffer that is
// allreduced is an fp16 copy in the communicator's scratch.
#include <cstdint>
#include <limits>
#include <string>

#include "colltune/collectives/cuda_transport.hpp"
#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/reducer.hpp"
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
                " needs a device codec on its own stream (use cuda::allreduce for device buffers)");
  }
  return *device;
}

namespace {

std::size_t checked_bytes(std::size_t count, DType dtype) {
  const std::size_t es = dtype_size(dtype);
  if (count > std::numeric_limits<std::size_t>::max() / es) {
    throw Error("cuda allreduce: count " + std::to_string(count) + " overflows the address space");
  }
  return count * es;
}

void check_arguments(const DeviceCommunicator& comm, const void* in, const void* out, std::size_t bytes,
                     const AllreduceOptions& o) {
  if (o.timeout_s <= 0) throw Error("cuda allreduce: timeout must be positive, got " + std::to_string(o.timeout_s));
  if (bytes > 0 && (in == nullptr || out == nullptr)) {
    throw Error("cuda allreduce: null buffer for " + std::to_string(bytes) + " bytes");
  }
  const auto a = reinterpret_cast<std::uintptr_t>(in), b = reinterpret_cast<std::uintptr_t>(out);
  if (in != out && bytes > 0 && a < b + bytes && b < a + bytes) {
    throw Error("cuda allreduce: input and output buffers overlap without being the same (in place)");
  }
  if (o.compression == Compression::fp16_fp32acc) {
    throw Error(std::string(comm.transport()) + " transport: compression fp16_fp32acc is not supported on GPUs; use fp16");
  }
  if (o.compression == Compression::fp16 && o.dtype != DType::f32 && o.dtype != DType::f64) {
    throw Error("fp16 compression applies to fp32 and fp64 data, not " + std::string(to_string(o.dtype)));
  }
}

std::shared_ptr<const Schedule> schedule_for(DeviceCommunicator& comm, std::size_t count, const AllreduceOptions& o) {
  auto schedule = comm.schedules().get(o.algorithm, comm.layout(), count, o.algo);
  if (schedule->collective != Collective::allreduce) {
    throw Error("algorithm '" + o.algorithm + "' is a " + std::string(to_string(schedule->collective)) +
                " algorithm, not allreduce");
  }
  return schedule;
}

std::size_t elements_sent(const Schedule& schedule, int rank) {
  std::size_t n = 0;
  for (const Step& step : schedule.steps(rank)) {
    for (const Op& op : step.ops) n += op.kind == OpKind::send ? op.block.count : 0;
  }
  return n;
}

double postscale_of(const DeviceCommunicator& comm, const AllreduceOptions& o) {
  return o.postscale * (o.op == ReduceOp::avg ? 1.0 / static_cast<double>(comm.size()) : 1.0);
}

AllreduceStats plain(DeviceCommunicator& comm, const void* in, void* out, std::size_t count,
                     const AllreduceOptions& o) {
  const std::size_t es = dtype_size(o.dtype);
  const void* initial = in;
  if (o.prescale != 1.0) {  // the executor reads `in` unscaled: scale a copy first
    cuda::copy(out, in, count * es, comm.stream());
    cuda::scale(o.dtype, out, count, o.prescale, comm.stream());
    initial = out;
  }
  auto schedule = schedule_for(comm, count, o);
  execute(*schedule, comm, out, es, DeviceCodec(o.dtype, o.op, comm.stream()), o.timeout_s, initial);
  cuda::scale(o.dtype, out, count, postscale_of(comm, o), comm.stream());
  AllreduceStats stats;
  stats.count = count;
  stats.bytes = count * es;
  stats.wire_bytes_sent = elements_sent(*schedule, comm.rank()) * es;
  return stats;
}

// Compression::fp16: compress (counting input overflows), allreduce the fp16 copy, count
// infinities in the result, widen back with the post-scale.
AllreduceStats compressed(DeviceCommunicator& comm, const void* in, void* out, std::size_t count,
                          const AllreduceOptions& o) {
  const std::size_t counts_bytes = 2 * sizeof(DeviceOverflowCounts);
  DeviceMemory& scratch = comm.scratch(counts_bytes + count * sizeof(std::uint16_t));
  auto* counts = reinterpret_cast<DeviceOverflowCounts*>(scratch.bytes());
  auto* half = reinterpret_cast<std::uint16_t*>(scratch.bytes() + counts_bytes);
  reset_counts(counts, comm.stream());
  reset_counts(counts + 1, comm.stream());
  compress(DType::f16, o.dtype, in, half, count, o.prescale, counts, comm.stream());
  auto schedule = schedule_for(comm, count, o);
  execute(*schedule, comm, half, sizeof(std::uint16_t), DeviceCodec(DType::f16, o.op, comm.stream()), o.timeout_s);
  scan_specials(DType::f16, half, count, counts + 1, comm.stream());
  decompress(DType::f16, o.dtype, half, out, count, postscale_of(comm, o), comm.stream());
  const OverflowReport input = read_counts(counts, comm.stream());
  const OverflowReport result = read_counts(counts + 1, comm.stream());
  AllreduceStats stats;
  stats.count = count;
  stats.bytes = count * dtype_size(o.dtype);
  stats.wire_bytes_sent = elements_sent(*schedule, comm.rank()) * sizeof(std::uint16_t);
  stats.input_overflows = input.overflowed;
  stats.result_overflows = result.overflowed;
  if (o.overflow == OverflowPolicy::error && stats.overflowed()) {
    throw Error("rank " + std::to_string(comm.rank()) + ": fp16 compression overflowed: " +
                std::to_string(stats.input_overflows) + " input element(s) and " +
                std::to_string(stats.result_overflows) + " result element(s) became inf; lower the prescale factor");
  }
  return stats;
}

}  // namespace

AllreduceStats allreduce(DeviceCommunicator& comm, const void* in, void* out, std::size_t count,
                         const AllreduceOptions& options) {
  const std::size_t bytes = checked_bytes(count, options.dtype);
  check_arguments(comm, in, out, bytes, options);
  if (options.compression == Compression::fp16) return compressed(comm, in, out, count, options);
  return plain(comm, in, out, count, options);
}

double allreduce_scalar(DeviceCommunicator& comm, double value, ReduceOp op, double timeout_s) {
  DeviceMemory& scratch = comm.scratch(sizeof(double));
  scratch.upload(&value, sizeof value, comm.stream());
  AllreduceOptions o;
  o.dtype = DType::f64;
  o.op = op;
  o.timeout_s = timeout_s;
  allreduce(comm, scratch.get(), scratch.get(), 1, o);
  synchronize(comm.stream(), timeout_s, "rank " + std::to_string(comm.rank()));
  double result = 0;
  scratch.download(&result, sizeof result, comm.stream());
  return result;
}

}  // namespace colltune::coll::cuda
