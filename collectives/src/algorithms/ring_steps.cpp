// The ring family generated step by step (step_source.hpp): ring allreduce, ring reduce-scatter
// and ring allgather over all ranks in rank order. This is the definition of those schedules:
// build_ring() and friends materialise it (ring.cpp).
//
// Step s of rank r: round j = s / S and position k = s % S, S steps per round (p-1 per phase;
// allreduce runs the reduce-scatter phase then the allgather phase, S = 2(p-1)). In step k of a
// phase rank r sends chunk j of segment ring_send_segment(phase, r, k, p) to r+1 and receives
// chunk j of the segment r-1 sends, reducing it (reduce-scatter) or copying it (allgather).
// Empty chunks (n < p, short last chunks) are not sent, so such a step may have fewer ops.
#include <memory>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/step_source.hpp"

namespace colltune::coll::algo {
namespace {

struct RingShape {
  bool reduce_scatter = true;  // runs the reduce-scatter phase
  bool allgather = true;       // runs the allgather phase
};

class RingSteps final : public StepSource {
 public:
  RingSteps(ScheduleHeader header, std::size_t chunk_elems, RingShape shape)
      : StepSource(std::move(header)), p_(this->header().nranks), chunk_(chunk_elems), shape_(shape) {
    const std::size_t n = this->header().count;
    const auto parts = static_cast<std::size_t>(p_);
    quotient_ = n / parts;
    remainder_ = n % parts;
    const int phases = (shape.reduce_scatter ? 1 : 0) + (shape.allgather ? 1 : 0);
    per_round_ = p_ < 2 ? 0 : static_cast<std::size_t>(phases) * static_cast<std::size_t>(p_ - 1);
    rounds_ = ring_rounds(n, parts, chunk_elems);
  }

  std::size_t num_steps(int /*rank*/) const override { return rounds_ * per_round_; }

  // Equal segments make every rank's steps the rotation of rank 0's: peers r+-1, and a segment
  // index that shifts with r. Uneven segments give ranks different block sizes: no symmetry.
  int rotation_period() const override { return remainder_ == 0 ? 1 : 0; }

  std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const override {
    scratch.clear();
    const std::size_t j = step / per_round_;
    int k = static_cast<int>(step % per_round_);
    RingPhase phase = shape_.reduce_scatter ? RingPhase::reduce_scatter : RingPhase::allgather;
    if (shape_.reduce_scatter && shape_.allgather && k >= p_ - 1) {
      phase = RingPhase::allgather;
      k -= p_ - 1;
    }
    const int next = ring_peer(rank, 1, p_);
    const int prev = ring_peer(rank, -1, p_);
    const Block out = chunk_of(segment(ring_send_segment(phase, rank, k, p_)), j, chunk_);
    const Block in = chunk_of(segment(ring_send_segment(phase, prev, k, p_)), j, chunk_);
    if (out.count > 0) scratch.push_back(Op{OpKind::send, next, out});
    if (in.count > 0) {
      scratch.push_back(Op{phase == RingPhase::reduce_scatter ? OpKind::recv_reduce : OpKind::recv_copy, prev, in});
    }
    return scratch;
  }

 private:
  // segment_of(index, p, count) with the division done once.
  Block segment(int index) const {
    const auto i = static_cast<std::size_t>(index);
    return Block{i * quotient_ + std::min(i, remainder_), quotient_ + (i < remainder_ ? 1 : 0)};
  }

  int p_;
  std::size_t chunk_;
  RingShape shape_;
  std::size_t quotient_ = 0;
  std::size_t remainder_ = 0;
  std::size_t per_round_ = 0;
  std::size_t rounds_ = 0;
};

std::vector<Block> segments(int p, std::size_t count) {
  std::vector<Block> owned;
  owned.reserve(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) owned.push_back(segment_of(static_cast<std::size_t>(r), static_cast<std::size_t>(p), count));
  return owned;
}

std::unique_ptr<StepSource> make_ring(const char* id, Collective collective, const RankLayout& layout, std::size_t count,
                                      const AlgoOptions& options, RingShape shape) {
  ScheduleHeader header{id, collective, layout.nranks(), count, {}};
  if (collective != Collective::allreduce) header.owned = segments(layout.nranks(), count);
  return std::make_unique<RingSteps>(std::move(header), options.chunk_elems, shape);
}

}  // namespace

int ring_send_segment(RingPhase phase, int member, int k, int q) {
  return ring_peer(member, phase == RingPhase::reduce_scatter ? -k - 1 : -k, q);
}

std::unique_ptr<StepSource> generate_ring(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  return make_ring("ring", Collective::allreduce, layout, count, options, RingShape{true, true});
}

std::unique_ptr<StepSource> generate_reduce_scatter_ring(const RankLayout& layout, std::size_t count,
                                                         const AlgoOptions& options) {
  return make_ring("reduce_scatter_ring", Collective::reduce_scatter, layout, count, options, RingShape{true, false});
}

std::unique_ptr<StepSource> generate_allgather_ring(const RankLayout& layout, std::size_t count,
                                                    const AlgoOptions& options) {
  return make_ring("allgather_ring", Collective::allgather, layout, count, options, RingShape{false, true});
}

}  // namespace colltune::coll::algo
