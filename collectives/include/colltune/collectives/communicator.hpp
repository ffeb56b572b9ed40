#pragma once
// A Communicator is one rank's endpoint of a transport (threads, MPI, CUDA virtual ranks, NCCL).
// It knows its rank, the rank count, the rank layout and the memory its buffers live in
// (memory_space.hpp), and it runs one schedule Step at a time with the semantics of
// schedule.hpp: every op of the step is posted together; sends read the working buffer as it
// was when the step began; receives land (reduce or copy) when the step ends; the step ends when
// all of its ops have completed. Every wait has a timeout: a peer that never arrives ends the
// step with colltune::TimeoutError naming this rank, the peer and the step.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "colltune/collectives/dtype.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/schedule.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::coll {

inline constexpr double kDefaultTimeoutS = 60.0;

// How blocks of the working buffer travel. The plain codec sends buffer elements as they are
// (zero copy where the transport allows) and reduces received elements with coll::reduce. A
// compressing codec (fp16 on the wire, fp32 accumulation) encodes each sent block into a
// staging area and decodes received bytes while reducing. A device codec (cuda_transport.hpp)
// does the same with CUDA kernels on device memory: the codec is what makes the executor work
// on host or device buffers alike.
class WireCodec {
 public:
  virtual ~WireCodec() = default;
  // Bytes one element takes on the wire.
  virtual std::size_t wire_elem_size() const = 0;
  // True when sent blocks must be encoded (the buffer's bytes cannot be sent as they are).
  virtual bool encodes() const = 0;
  // Writes the wire form of `count` buffer elements at `src` to `wire`.
  virtual void encode(const std::byte* src, std::size_t count, std::byte* wire) const = 0;
  // Lands `count` received wire elements into `dst` (buffer elements): reduce or copy. With
  // `init` (reduce only), dst holds nothing yet and becomes init op received: the out-of-place
  // input is folded in on the fly instead of being copied into the buffer first.
  virtual void apply(OpKind kind, std::byte* dst, const std::byte* wire, std::size_t count,
                     const std::byte* init = nullptr) const = 0;
  // Copies `bytes` of buffer memory (the executor filling untouched blocks from the
  // out-of-place input). Host memory: memcpy; a device codec copies on its stream.
  virtual void copy(std::byte* dst, const std::byte* src, std::size_t bytes) const;
};

// Buffer elements on the wire as they are; receives reduce with coll::reduce(dtype, op).
class PlainCodec final : public WireCodec {
 public:
  PlainCodec(DType dtype, ReduceOp op);
  std::size_t wire_elem_size() const override { return elem_size_; }
  bool encodes() const override { return false; }
  void encode(const std::byte* src, std::size_t count, std::byte* wire) const override;
  void apply(OpKind kind, std::byte* dst, const std::byte* wire, std::size_t count,
             const std::byte* init = nullptr) const override;

 private:
  DType dtype_;
  ReduceOp op_;
  std::size_t elem_size_;
};

// Out of place, the working buffer starts empty and the input is read where it is needed
// (see executor.cpp): a send may read the input, a receive-reduce may fold it in.
enum class OpSource : std::uint8_t { buffer, initial };

// What one step works on.
struct StepContext {
  std::byte* buffer = nullptr;     // the working buffer
  std::size_t elem_size = 0;       // bytes per buffer element
  const WireCodec* codec = nullptr;
  int step_index = 0;              // for error messages
  double timeout_s = kDefaultTimeoutS;
  // Out of place only: the caller's input, and per op of the step (same index) whether a send
  // reads it instead of the buffer, or a receive-reduce lands as input op received.
  const std::byte* initial = nullptr;
  const std::vector<OpSource>* sources = nullptr;

  bool from_initial(std::size_t op_index) const {
    return sources != nullptr && (*sources)[op_index] == OpSource::initial;
  }
  // Where send op `i` reads its block.
  const std::byte* send_data(std::size_t i, const Op& op) const {
    return (from_initial(i) ? initial : buffer) + op.block.offset * elem_size;
  }
  // The `init` argument of WireCodec::apply for receive op `i` (null: reduce into the buffer).
  const std::byte* reduce_init(std::size_t i, const Op& op) const {
    return from_initial(i) ? initial + op.block.offset * elem_size : nullptr;
  }
};

// Built schedules, cached per (algorithm, collective options, count) so that repeated
// collectives (benchmark iterations, training steps) do not rebuild them.
class ScheduleCache {
 public:
  std::shared_ptr<const Schedule> get(std::string_view algorithm, const RankLayout& layout,
                                      std::size_t count, const AlgoOptions& options);
  std::size_t size() const { return entries_.size(); }

 private:
  using Key = std::tuple<std::string, std::size_t, std::size_t, std::string>;
  static constexpr std::size_t kMaxEntries = 256;  // bounded: a sweep of sizes stays small
  std::map<Key, std::shared_ptr<const Schedule>> entries_;
};

class MemorySpace;

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const RankLayout& layout() const = 0;
  // The transport's name: "threads", "mpi", "cuda", "nccl".
  virtual std::string_view transport() const = 0;
  // The memory this rank's buffers live in: host memory (memory_space.hpp) unless the
  // transport's ranks hold device memory.
  virtual MemorySpace& memory();

  // Runs one step of this rank's schedule (see the file comment). Throws TimeoutError when a
  // peer does not arrive within ctx.timeout_s, colltune::Error when a received message does
  // not have the size the step expects.
  virtual void run_step(const Step& step, const StepContext& ctx) = 0;
  // All ranks arrive before any leaves; TimeoutError after timeout_s.
  virtual void barrier(double timeout_s) = 0;

  ScheduleCache& schedules() { return schedules_; }

 private:
  ScheduleCache schedules_;
};

}  // namespace colltune::coll
