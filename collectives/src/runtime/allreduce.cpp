// The collective front end, one for every transport: argument checks, in/out of place,
// scaling, schedule cache, and the uncompressed paths of allreduce, reduce-scatter and
// allgather; the fp16 paths live in allreduce_fp16.cpp. What depends on where the buffers live
// (host or device memory: copies, scaling, the codec) is the communicator's MemorySpace.
#include "colltune/collectives/allreduce.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "allreduce_detail.hpp"
#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/memory_space.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {

std::string_view to_string(Compression c) {
  switch (c) {
    case Compression::none: return "none";
    case Compression::fp16: return "fp16";
    case Compression::fp16_fp32acc: return "fp16_fp32acc";
  }
  return "?";
}

Compression parse_compression(std::string_view name) {
  for (Compression c : {Compression::none, Compression::fp16, Compression::fp16_fp32acc}) {
    if (to_string(c) == name) return c;
  }
  throw Error("compression '" + std::string(name) + "': expected none, fp16 or fp16_fp32acc");
}

namespace detail {

std::size_t checked_bytes(std::size_t count, DType dtype, std::string_view what) {
  const std::size_t es = dtype_size(dtype);
  if (count > std::numeric_limits<std::size_t>::max() / es) {
    throw Error(std::string(what) + ": count " + std::to_string(count) + " x " + std::to_string(es) +
                " bytes overflows the address space");
  }
  return count * es;
}

void check_buffers(const void* in, const void* out, std::size_t bytes, std::string_view what) {
  if (bytes == 0) return;
  if (in == nullptr || out == nullptr) throw Error(std::string(what) + ": null buffer for " + std::to_string(bytes) + " bytes");
  if (in == out) return;
  const auto a = reinterpret_cast<std::uintptr_t>(in);
  const auto b = reinterpret_cast<std::uintptr_t>(out);
  if (a < b + bytes && b < a + bytes) {
    throw Error(std::string(what) + ": input and output buffers overlap without being the same (in place)");
  }
}

double effective_postscale(const Communicator& comm, const AllreduceOptions& options) {
  const double avg = options.op == ReduceOp::avg ? 1.0 / static_cast<double>(comm.size()) : 1.0;
  return options.postscale * avg;
}

std::shared_ptr<const Schedule> schedule_for(Communicator& comm, std::size_t count, const AllreduceOptions& options,
                                             Collective expected) {
  auto schedule = comm.schedules().get(options.algorithm, comm.layout(), count, options.algo);
  if (schedule->collective != expected) {
    throw Error("algorithm '" + options.algorithm + "' is a " + std::string(to_string(schedule->collective)) +
                " algorithm, not " + std::string(to_string(expected)));
  }
  // A helper (nccl_nvls's NVSwitch, a dedicated parameter server) ends with no result, so a
  // communicator whose every rank wants one cannot run such a schedule: refuse rather than leave
  // the last ranks' outputs unreduced. coll::execute runs it with the helpers as their own ranks.
  if (schedule->helpers > 0) {
    throw Error("algorithm '" + options.algorithm + "': its last " + std::to_string(schedule->helpers) +
                " of " + std::to_string(schedule->nranks) +
                " ranks are helpers (a switch or server, not a data rank); allreduce needs every rank's result");
  }
  return schedule;
}

std::size_t wire_elements_sent(const Schedule& schedule, int rank) {
  std::size_t n = 0;
  for (const Step& step : schedule.steps(rank)) {
    for (const Op& op : step.ops) n += op.kind == OpKind::send ? op.block.count : 0;
  }
  return n;
}

}  // namespace detail

namespace {

AllreduceStats allreduce_plain(Communicator& comm, const void* in, void* out, std::size_t count,
                               const AllreduceOptions& options) {
  const std::size_t bytes = count * dtype_size(options.dtype);
  MemorySpace& memory = comm.memory();
  // Out of place, the executor reads `in` where it needs it rather than copying it up front;
  // a prescale has to be applied to a copy first.
  const void* initial = in;
  if (options.prescale != 1.0) {
    if (in != out) memory.copy(out, in, bytes);
    memory.scale(options.dtype, out, count, options.prescale);
    initial = out;
  }
  auto schedule = detail::schedule_for(comm, count, options, Collective::allreduce);
  execute(*schedule, comm, out, dtype_size(options.dtype), *memory.codec(options.dtype, options.op), options.timeout_s,
          initial);
  const double post = detail::effective_postscale(comm, options);
  if (post != 1.0) memory.scale(options.dtype, out, count, post);
  AllreduceStats stats;
  stats.count = count;
  stats.bytes = bytes;
  stats.wire_bytes_sent = detail::wire_elements_sent(*schedule, comm.rank()) * dtype_size(options.dtype);
  return stats;
}

}  // namespace

AllreduceStats allreduce(Communicator& comm, const void* in, void* out, std::size_t count,
                         const AllreduceOptions& options) {
  const std::size_t bytes = detail::checked_bytes(count, options.dtype, "allreduce");
  detail::check_buffers(in, out, bytes, "allreduce");
  if (options.timeout_s <= 0) throw Error("allreduce: timeout must be positive, got " + std::to_string(options.timeout_s));
  if (const std::string_view why = comm.memory().refuses(options.compression); !why.empty()) {
    throw Error(std::string(comm.transport()) + " transport: compression " + std::string(to_string(options.compression)) +
                " is " + std::string(why));
  }
  if (options.compression == Compression::none) return allreduce_plain(comm, in, out, count, options);
  return detail::allreduce_fp16(comm, in, out, count, options);
}

Block reduce_scatter(Communicator& comm, void* buffer, std::size_t count, const AllreduceOptions& options) {
  const std::size_t bytes = detail::checked_bytes(count, options.dtype, "reduce_scatter");
  detail::check_buffers(buffer, buffer, bytes, "reduce_scatter");
  auto schedule = detail::schedule_for(comm, count, options, Collective::reduce_scatter);
  const Block mine = schedule->owned.at(static_cast<std::size_t>(comm.rank()));
  auto* base = static_cast<std::byte*>(buffer) + mine.offset * dtype_size(options.dtype);
  MemorySpace& memory = comm.memory();
  if (options.prescale != 1.0) memory.scale(options.dtype, buffer, count, options.prescale);
  execute(*schedule, comm, buffer, dtype_size(options.dtype), *memory.codec(options.dtype, options.op), options.timeout_s);
  const double post = detail::effective_postscale(comm, options);
  if (post != 1.0) memory.scale(options.dtype, base, mine.count, post);
  return mine;
}

void allgather(Communicator& comm, void* buffer, std::size_t count, const AllreduceOptions& options) {
  const std::size_t bytes = detail::checked_bytes(count, options.dtype, "allgather");
  detail::check_buffers(buffer, buffer, bytes, "allgather");
  auto schedule = detail::schedule_for(comm, count, options, Collective::allgather);
  execute(*schedule, comm, buffer, dtype_size(options.dtype), *comm.memory().codec(options.dtype, options.op),
          options.timeout_s);
}

Block owned_block(Communicator& comm, std::size_t count, const AllreduceOptions& options) {
  auto schedule = comm.schedules().get(options.algorithm, comm.layout(), count, options.algo);
  if (schedule->owned.empty()) {
    throw Error("algorithm '" + options.algorithm + "' is an allreduce: its ranks own no blocks");
  }
  return schedule->owned.at(static_cast<std::size_t>(comm.rank()));
}

}  // namespace colltune::coll
