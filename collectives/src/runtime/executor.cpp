// The executor and what every transport shares: the plain wire codec, the schedule cache and
// the block-overlap helpers.
#include "colltune/collectives/executor.hpp"

#include <cstring>
#include <string>

#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {

PlainCodec::PlainCodec(DType dtype, ReduceOp op) : dtype_(dtype), op_(op), elem_size_(dtype_size(dtype)) {}

void PlainCodec::encode(const std::byte* src, std::size_t count, std::byte* wire) const {
  if (count > 0) std::memcpy(wire, src, count * elem_size_);
}

void PlainCodec::apply(OpKind kind, std::byte* dst, const std::byte* wire, std::size_t count) const {
  if (count == 0) return;
  if (kind == OpKind::recv_copy) {
    std::memcpy(dst, wire, count * elem_size_);
  } else {
    reduce(dtype_, op_, dst, wire, count);
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

void execute(const Schedule& schedule, Communicator& comm, void* buffer, std::size_t elem_size,
             const WireCodec& codec, double timeout_s) {
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
  for (std::size_t s = 0; s < steps.size(); ++s) {
    ctx.step_index = static_cast<int>(s);
    comm.run_step(steps[s], ctx);
  }
}

}  // namespace colltune::coll
