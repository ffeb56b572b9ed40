// fp16 compression of allreduce, on any memory (the conversions are the communicator's
// MemorySpace's Fp16Stage; compression.hpp has the CPU's):
// - fp16 (Horovod's Compression.fp16): in x prescale -> fp16 buffer; allreduce it in fp16;
//   fp16 -> out x postscale. Wire bytes and reduction both fp16.
// - fp16_fp32acc: the working buffer is fp32 holding the fp16-cast inputs; blocks travel as
//   fp16 (Fp16WireCodec) and every received block is accumulated into fp32. At the end the
//   result is rounded to fp16 once: the owner of a block holds its fp32 sum while the others
//   received its fp16 form, and rounding makes every rank's result identical. Host memory only
//   (a device's MemorySpace refuses it before the front end gets here).
// Overflow: inputs that become +-inf after prescale are counted per rank; infinities in the
// fp16 result (the same on every rank) are counted too; OverflowPolicy::error turns either
// into colltune::Error after the collective has completed on every rank.
#include <cstdint>
#include <string>
#include <vector>

#include "allreduce_detail.hpp"
#include "colltune/collectives/compression.hpp"
#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/memory_space.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::detail {
namespace {

class Fp16WireCodec final : public WireCodec {
 public:
  explicit Fp16WireCodec(ReduceOp op) : op_(op) {}
  std::size_t wire_elem_size() const override { return sizeof(std::uint16_t); }
  bool encodes() const override { return true; }
  void encode(const std::byte* src, std::size_t count, std::byte* wire) const override {
    encode_f16_wire(reinterpret_cast<const float*>(src), reinterpret_cast<std::uint16_t*>(wire), count);
  }
  // Its buffer is always this rank's own fp32 accumulator (never out of place): no `init`.
  void apply(OpKind kind, std::byte* dst, const std::byte* wire, std::size_t count,
             const std::byte* /*init*/) const override {
    auto* acc = reinterpret_cast<float*>(dst);
    const auto* in = reinterpret_cast<const std::uint16_t*>(wire);
    if (kind == OpKind::recv_copy) {
      decode_f16_wire(in, acc, count);
    } else {
      reduce_f16_into_f32(op_, acc, in, count);
    }
  }

 private:
  ReduceOp op_;
};

void check_compressible(const AllreduceOptions& options) {
  if (options.dtype != DType::f32 && options.dtype != DType::f64) {
    throw Error("fp16 compression applies to fp32 and fp64 data, not " + std::string(to_string(options.dtype)));
  }
}

void enforce_policy(const AllreduceStats& stats, const AllreduceOptions& options, int rank,
                    std::size_t first_result_overflow) {
  if (options.overflow != OverflowPolicy::error || !stats.overflowed()) return;
  std::string what = "rank " + std::to_string(rank) + ": fp16 compression overflowed: ";
  what += std::to_string(stats.input_overflows) + " input element(s) and " + std::to_string(stats.result_overflows) +
          " result element(s) became inf";
  if (stats.result_overflows > 0) what += " (first result index " + std::to_string(first_result_overflow) + ")";
  throw Error(what + "; lower the prescale factor");
}

// Runs the allreduce schedule over the fp16 buffer (Compression::fp16).
std::shared_ptr<const Schedule> reduce_in_f16(Communicator& comm, std::uint16_t* half, std::size_t count,
                                              const AllreduceOptions& options) {
  auto schedule = schedule_for(comm, count, options, Collective::allreduce);
  execute(*schedule, comm, half, sizeof(std::uint16_t), *comm.memory().codec(DType::f16, options.op),
          options.timeout_s);
  return schedule;
}

// Runs it over an fp32 accumulator with fp16 on the wire (Compression::fp16_fp32acc), then
// rounds the accumulator back into `half`.
std::shared_ptr<const Schedule> reduce_f32_acc(Communicator& comm, std::uint16_t* half, std::size_t count,
                                               const AllreduceOptions& options) {
  std::vector<float> acc(count);
  decode_f16_wire(half, acc.data(), count);
  auto schedule = schedule_for(comm, count, options, Collective::allreduce);
  execute(*schedule, comm, acc.data(), sizeof(float), Fp16WireCodec(options.op), options.timeout_s);
  encode_f16_wire(acc.data(), half, count);  // overflow found by the scan below
  return schedule;
}

}  // namespace

AllreduceStats allreduce_fp16(Communicator& comm, const void* in, void* out, std::size_t count,
                              const AllreduceOptions& options) {
  check_compressible(options);
  const std::unique_ptr<Fp16Stage> stage = comm.memory().fp16_stage(count);
  stage->compress(in, options.dtype, options.prescale);
  auto schedule = options.compression == Compression::fp16 ? reduce_in_f16(comm, stage->half(), count, options)
                                                           : reduce_f32_acc(comm, stage->half(), count, options);
  stage->scan_result();
  stage->decompress(out, options.dtype, effective_postscale(comm, options));
  const Fp16Counts counts = stage->counts();
  AllreduceStats stats;
  stats.count = count;
  stats.bytes = count * dtype_size(options.dtype);
  stats.wire_bytes_sent = wire_elements_sent(*schedule, comm.rank()) * sizeof(std::uint16_t);
  stats.input_overflows = counts.input.overflowed;
  stats.result_overflows = counts.result.overflowed;
  enforce_policy(stats, options, comm.rank(), counts.result.first_index);
  return stats;
}

}  // namespace colltune::coll::detail
