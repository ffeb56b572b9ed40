// The executor and what every transport shares: the plain wire codec, the schedule cache and
// the block-overlap helpers.
#include "colltune/collectives/executor.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "colltune/collectives/reducer.hpp"
#include "executor_init.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {

namespace {
constexpr std::size_t kFoldPieceBytes = 32 * 1024;  // fits in L1/L2 next to its operands
}  // namespace

void WireCodec::copy(std::byte* dst, const std::byte* src, std::size_t bytes) const {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

PlainCodec::PlainCodec(DType dtype, ReduceOp op) : dtype_(dtype), op_(op), elem_size_(dtype_size(dtype)) {}

void PlainCodec::encode(const std::byte* src, std::size_t count, std::byte* wire) const {
  if (count > 0) std::memcpy(wire, src, count * elem_size_);
}

void PlainCodec::apply(OpKind kind, std::byte* dst, const std::byte* wire, std::size_t count,
                       const std::byte* init) const {
  if (count == 0) return;
  if (kind == OpKind::recv_copy) {
    std::memcpy(dst, wire, count * elem_size_);
  } else if (init == nullptr) {
    reduce(dtype_, op_, dst, wire, count);
  } else {
    // dst = init op wire, a cache-sized piece at a time: the copied piece is still in cache
    // when the reduction reads it back.
    const std::size_t piece = kFoldPieceBytes / elem_size_;
    for (std::size_t i = 0; i < count; i += piece) {
      const std::size_t n = std::min(piece, count - i);
      std::memcpy(dst + i * elem_size_, init + i * elem_size_, n * elem_size_);
      reduce(dtype_, op_, dst + i * elem_size_, wire + i * elem_size_, n);
    }
  }
}

std::shared_ptr<const Schedule> ScheduleCache::get(std::string_view algorithm, const RankLayout& layout,
                                                   std::size_t count, const AlgoOptions& options) {
  Key key{std::string(algorithm), count, options.chunk_elems, options.inner};
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  auto schedule = std::make_shared<const Schedule>(build_schedule(algorithm, layout, count, options));
  // A long sweep of distinct sizes must not grow without bound: start over when full.
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_.emplace(std::move(key), schedule);
  return schedule;
}

bool overlaps_a_send(const Step& step, const Op& op) {
  for (const Op& other : step.ops) {
    if (other.kind == OpKind::send && overlaps(other.block, op.block)) return true;
  }
  return false;
}

bool receive_overlaps_send(const Step& step) {
  for (const Op& op : step.ops) {
    if (op.kind != OpKind::send && overlaps_a_send(step, op)) return true;
  }
  return false;
}

std::string step_where(int rank, int step_index) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(step_index);
}

namespace {

// Out of place, decides for each op of `step` where it reads (see executor.hpp): a send of a
// block that holds no value yet reads the input; a receive-reduce into such a block folds the
// input in, unless another receive of the step lands on it too (then the input is copied
// first). Partly filled blocks are completed from the input before the step.
void plan_sources(const Step& step, detail::InitTracker& tracker, std::vector<OpSource>& sources) {
  sources.assign(step.ops.size(), OpSource::buffer);
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind == OpKind::recv_copy) continue;
    bool alone = true;
    for (std::size_t j = 0; j < step.ops.size() && op.kind == OpKind::recv_reduce; ++j) {
      if (j != i && step.ops[j].kind != OpKind::send && overlaps(step.ops[j].block, op.block)) alone = false;
    }
    if (tracker.untouched(op.block) && alone) {
      sources[i] = OpSource::initial;
    } else {
      tracker.fill(op.block);
    }
  }
}

void mark_receives(const Step& step, detail::InitTracker& tracker) {
  for (const Op& op : step.ops) {
    if (op.kind != OpKind::send) tracker.mark(op.block);
  }
}

}  // namespace

void execute(const Schedule& schedule, Communicator& comm, void* buffer, std::size_t elem_size,
             const WireCodec& codec, double timeout_s, const void* initial) {
  if (schedule.nranks != comm.size()) {
    throw Error("schedule '" + schedule.algorithm + "' was built for " + std::to_string(schedule.nranks) +
                " ranks, the communicator has " + std::to_string(comm.size()));
  }
  if (buffer == nullptr && schedule.count > 0) {
    throw Error("execute: null buffer for " + std::to_string(schedule.count) + " elements");
  }
  StepContext ctx;
  ctx.buffer = static_cast<std::byte*>(buffer);
  ctx.elem_size = elem_size;
  ctx.codec = &codec;
  ctx.timeout_s = timeout_s;
  const auto& steps = schedule.steps(comm.rank());
  if (initial == nullptr || initial == buffer) {
    for (std::size_t s = 0; s < steps.size(); ++s) {
      ctx.step_index = static_cast<int>(s);
      comm.run_step(steps[s], ctx);
    }
    return;
  }
  ctx.initial = static_cast<const std::byte*>(initial);
  detail::InitTracker tracker(ctx.buffer, ctx.initial, elem_size, codec);
  std::vector<OpSource> sources;
  ctx.sources = &sources;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    ctx.step_index = static_cast<int>(s);
    plan_sources(steps[s], tracker, sources);
    comm.run_step(steps[s], ctx);
    mark_receives(steps[s], tracker);
  }
  tracker.fill({0, schedule.count});  // what no step touched keeps its input
}

}  // namespace colltune::coll
