// The one definition of a ring (step_source.hpp): rings over any rank sequences, generated step
// by step. The flat ring family (ring, reduce_scatter_ring, allgather_ring) is one ring over the
// ranks in rank order; hierarchical runs one ring per host; NCCL's channels are several rings
// over all ranks, each on its own slice of the buffer.
//
// A ring of q members works on a range of the buffer cut into q balanced segments. Step s of a
// member: round j = s / S and position k = s % S, S steps per round (q-1 per phase; allreduce
// runs the reduce-scatter phase then the allgather phase, S = 2(q-1)). In step k of a phase
// member i sends chunk j of segment ring_send_segment(phase, i, k, q) to member i+1 and receives
// chunk j of the segment member i-1 sends, reducing it (reduce-scatter) or copying it
// (allgather). After the reduce-scatter member i holds the reduction of segment i. Empty chunks
// (a range shorter than q, short last chunks) are not sent, so such a step may have fewer ops.
// All rings of one source run in lockstep: a rank's step s holds the ops of every ring it
// belongs to at position s, in ring order.
#include <algorithm>
#include <memory>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

bool runs_reduce_scatter(RingShape shape) { return shape != RingShape::allgather; }
bool runs_allgather(RingShape shape) { return shape != RingShape::reduce_scatter; }

// A ring with its segment arithmetic done once.
struct Ring {
  RingSpec spec;
  int q = 0;
  std::size_t quotient = 0;   // segment size before the remainder is spread
  std::size_t remainder = 0;

  // segment_of(index, q, range.count), shifted to the range, without dividing.
  Block segment(int index) const {
    const auto i = static_cast<std::size_t>(index);
    return Block{spec.range.offset + i * quotient + std::min(i, remainder), quotient + (i < remainder ? 1 : 0)};
  }
};

// One rank's place in one ring.
struct Membership {
  std::uint32_t ring = 0;
  int position = 0;
};

class RingSteps final : public StepSource {
 public:
  RingSteps(ScheduleHeader header, std::vector<RingSpec> specs, std::size_t chunk_elems, RingShape shape)
      : StepSource(std::move(header)), chunk_(chunk_elems), shape_(shape) {
    const int p = this->header().nranks;
    const int phases = (runs_reduce_scatter(shape) ? 1 : 0) + (runs_allgather(shape) ? 1 : 0);
    first_.assign(static_cast<std::size_t>(p) + 1, 0);
    std::vector<std::vector<Membership>> of_rank(static_cast<std::size_t>(p));
    for (std::size_t r = 0; r < specs.size(); ++r) add_ring(std::move(specs[r]), r, of_rank);
    for (int rank = 0; rank < p; ++rank) {
      const auto& mine = of_rank[static_cast<std::size_t>(rank)];
      member_of_.insert(member_of_.end(), mine.begin(), mine.end());
      first_[static_cast<std::size_t>(rank) + 1] = member_of_.size();
    }
    const int q = rings_.empty() ? 0 : rings_.front().q;
    per_round_ = q < 2 ? 0 : static_cast<std::size_t>(phases) * static_cast<std::size_t>(q - 1);
    for (const Ring& ring : rings_) rounds_ = std::max(rounds_, ring_rounds(ring.spec.range.count, static_cast<std::size_t>(q), chunk_elems));
  }

  std::size_t num_steps(int rank) const override {
    const auto r = static_cast<std::size_t>(rank);
    return first_[r] == first_[r + 1] ? 0 : rounds_ * per_round_;
  }

  // Rings over all ranks, each cut into equal segments, whose successor maps commute with
  // rotating ranks by d: succ(r + d) = succ(r) + d (mod p) in every ring. Rank r + d then sits in
  // every ring where r sits, shifted, so its step s has rank r's ops with peers shifted by d,
  // the same channels and, the segments being equal, the same counts (segment indices differ).
  // One ring in rank order has d = 1; NCCL's channels, each visiting every server's ranks in
  // one local order, have d = the ranks per server. Uneven segments: none declared.
  int rotation_period() const override {
    const bool equal_segments =
        std::all_of(rings_.begin(), rings_.end(), [](const Ring& ring) { return ring.remainder == 0; });
    return equal_segments ? structure_period() : 0;
  }

  // As rotation_period, with segments of any sizes: a segment larger by one element (the first
  // `remainder` of a ring's range) changes only the counts of the ranks that send or receive it,
  // which irregular_ranks lists.
  int structure_period() const override {
    const int p = header().nranks;
    if (rings_.empty() || p < 2) return 0;
    std::vector<std::vector<int>> succ;
    succ.reserve(rings_.size());
    for (const Ring& ring : rings_) {
      if (ring.q != p) return 0;
      succ.push_back(successors(ring));
      if (succ.back().empty()) return 0;
    }
    for (int d = 1; d < p; ++d)
      if (p % d == 0 && std::all_of(succ.begin(), succ.end(), [&](const std::vector<int>& s) { return commutes(s, d); }))
        return d;
    return 0;
  }

  // The members that send or receive one of a ring's larger segments at this step: for segment
  // g < remainder, the member whose send segment is g (ring_send_segment solved for the member)
  // and the next one. O(remainder) per ring.
  void irregular_ranks(std::size_t step, std::vector<int>& out) const override {
    out.clear();
    if (per_round_ == 0) return;
    int k = static_cast<int>(step % per_round_);
    RingPhase phase = runs_reduce_scatter(shape_) ? RingPhase::reduce_scatter : RingPhase::allgather;
    if (shape_ == RingShape::allreduce && k >= per_ring_phase()) {
      phase = RingPhase::allgather;
      k -= per_ring_phase();
    }
    for (const Ring& ring : rings_) {
      const int shift = phase == RingPhase::reduce_scatter ? k + 1 : k;  // member = segment + shift
      for (std::size_t g = 0; g < ring.remainder; ++g) {
        const int sender = ring_peer(static_cast<int>(g), shift, ring.q);
        out.push_back(ring.spec.members[static_cast<std::size_t>(sender)]);
        out.push_back(ring.spec.members[static_cast<std::size_t>(ring_peer(sender, 1, ring.q))]);
      }
    }
  }

  std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const override {
    scratch.clear();
    const std::size_t j = step / per_round_;
    int k = static_cast<int>(step % per_round_);
    RingPhase phase = runs_reduce_scatter(shape_) ? RingPhase::reduce_scatter : RingPhase::allgather;
    if (shape_ == RingShape::allreduce && k >= per_ring_phase()) {
      phase = RingPhase::allgather;
      k -= per_ring_phase();
    }
    const auto r = static_cast<std::size_t>(rank);
    for (std::size_t m = first_[r]; m < first_[r + 1]; ++m) append_ops(member_of_[m], phase, k, j, scratch);
    return scratch;
  }

 private:
  int per_ring_phase() const { return rings_.front().q - 1; }

  // Each rank's next member in the ring (a ring of every rank); empty if a rank repeats.
  std::vector<int> successors(const Ring& ring) const {
    const auto& members = ring.spec.members;
    std::vector<int> succ(members.size(), -1);
    for (std::size_t i = 0; i < members.size(); ++i) {
      int& next = succ[static_cast<std::size_t>(members[i])];
      if (next >= 0) return {};
      next = members[(i + 1) % members.size()];
    }
    return succ;
  }

  // Whether succ(r + d) = succ(r) + d (mod p) for every rank r.
  static bool commutes(const std::vector<int>& succ, int d) {
    const int p = static_cast<int>(succ.size());
    for (int r = 0; r < p; ++r)
      if (succ[static_cast<std::size_t>((r + d) % p)] != (succ[static_cast<std::size_t>(r)] + d) % p) return false;
    return true;
  }

  void add_ring(RingSpec spec, std::size_t index, std::vector<std::vector<Membership>>& of_rank) {
    const int q = static_cast<int>(spec.members.size());
    if (!rings_.empty() && q != rings_.front().q)
      throw Error("ring schedule '" + header().algorithm + "': rings of " + std::to_string(rings_.front().q) + " and " +
                  std::to_string(q) + " members cannot run in lockstep");
    const auto parts = static_cast<std::size_t>(std::max(q, 1));
    Ring ring{std::move(spec), q, 0, 0};
    ring.quotient = ring.spec.range.count / parts;
    ring.remainder = ring.spec.range.count % parts;
    for (int i = 0; i < q; ++i) {
      const int member = ring.spec.members[static_cast<std::size_t>(i)];
      if (member < 0 || member >= header().nranks)
        throw Error("ring schedule '" + header().algorithm + "': member " + std::to_string(member) + " is not a rank");
      of_rank[static_cast<std::size_t>(member)].push_back(Membership{static_cast<std::uint32_t>(index), i});
    }
    rings_.push_back(std::move(ring));
  }

  // The send to the next member and the receive from the previous one, at step k of `phase` in
  // round j, for the member at `m.position` of ring `m.ring`.
  void append_ops(const Membership& m, RingPhase phase, int k, std::size_t j, std::vector<Op>& out) const {
    const Ring& ring = rings_[m.ring];
    const int q = ring.q;
    const int i = m.position;
    const int prev = ring_peer(i, -1, q);
    const auto& members = ring.spec.members;
    const auto channel = static_cast<std::uint16_t>(ring.spec.channel);
    const Block send = chunk_of(ring.segment(ring_send_segment(phase, i, k, q)), j, chunk_);
    const Block recv = chunk_of(ring.segment(ring_send_segment(phase, prev, k, q)), j, chunk_);
    if (send.count > 0) out.emplace_back(OpKind::send, members[static_cast<std::size_t>(ring_peer(i, 1, q))], send, channel);
    if (recv.count > 0) {
      const OpKind kind = phase == RingPhase::reduce_scatter ? OpKind::recv_reduce : OpKind::recv_copy;
      out.emplace_back(kind, members[static_cast<std::size_t>(prev)], recv, channel);
    }
  }

  std::size_t chunk_;
  RingShape shape_;
  std::vector<Ring> rings_;
  std::vector<Membership> member_of_;  // every rank's memberships, rank after rank
  std::vector<std::size_t> first_;     // rank r's memberships: member_of_[first_[r], first_[r+1])
  std::size_t per_round_ = 0;
  std::size_t rounds_ = 0;
};

std::vector<Block> segments(int p, std::size_t count) {
  std::vector<Block> owned;
  owned.reserve(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) owned.push_back(segment_of(static_cast<std::size_t>(r), static_cast<std::size_t>(p), count));
  return owned;
}

// The flat family: one ring over all ranks in rank order on the whole buffer.
std::unique_ptr<StepSource> flat_ring(const char* id, Collective collective, RingShape shape, const RankLayout& layout,
                                      std::size_t count, const AlgoOptions& options) {
  ScheduleHeader header{id, collective, layout.nranks(), count, {}};
  if (collective != Collective::allreduce) header.owned = segments(layout.nranks(), count);
  std::vector<RingSpec> ring{RingSpec{all_ranks(layout.nranks()), Block{0, count}, 0}};
  return generate_rings(std::move(header), std::move(ring), options.chunk_elems, shape);
}

}  // namespace

int ring_send_segment(RingPhase phase, int member, int k, int q) {
  return ring_peer(member, phase == RingPhase::reduce_scatter ? -k - 1 : -k, q);
}

std::size_t ring_rounds(std::size_t count, std::size_t parts, std::size_t chunk_elems) {
  return chunk_count(segment_of(0, parts, count).count, chunk_elems);
}

std::unique_ptr<StepSource> generate_rings(ScheduleHeader header, std::vector<RingSpec> rings, std::size_t chunk_elems,
                                           RingShape shape) {
  return std::make_unique<RingSteps>(std::move(header), std::move(rings), chunk_elems, shape);
}

std::unique_ptr<StepSource> generate_ring(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  return flat_ring("ring", Collective::allreduce, RingShape::allreduce, layout, count, options);
}

std::unique_ptr<StepSource> generate_reduce_scatter_ring(const RankLayout& layout, std::size_t count,
                                                         const AlgoOptions& options) {
  return flat_ring("reduce_scatter_ring", Collective::reduce_scatter, RingShape::reduce_scatter, layout, count, options);
}

std::unique_ptr<StepSource> generate_allgather_ring(const RankLayout& layout, std::size_t count,
                                                    const AlgoOptions& options) {
  return flat_ring("allgather_ring", Collective::allgather, RingShape::allgather, layout, count, options);
}

}  // namespace colltune::coll::algo
