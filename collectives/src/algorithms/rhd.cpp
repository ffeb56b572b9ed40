// Recursive halving-doubling allreduce (Rabenseifner; Thakur, Rabenseifner & Gropp 2005), in two
// orders of distances: "rhd" halves across the largest distance first (p'/2, p'/4, ..., 1), as
// MPICH does; "rhd_near" starts with the nearest partner (1, 2, ..., p'/2), as SimGrid's
// rab_rdb does, so the largest exchanges stay between neighbours (inside a host, under one leaf
// switch) and only the smallest cross the spine.
//
// p' = largest power of two <= p, e = p - p' extra ranks. Steps:
//  1. fold (only when e > 0): for i < e, rank 2i sends its whole buffer to rank 2i+1, which
//     reduces it; the e even ranks below 2e then wait. The p' active ranks get new ranks
//     (odd r < 2e -> r/2, r >= 2e -> r - e).
//  2. reduce-scatter by recursive halving, lg p' steps: in step k the distance is d_k; new rank
//     v exchanges with v xor d_k. Both hold the same aligned group of p'/2^k of the p' balanced
//     segments (the segments whose top k index bits are v's bits at d_0 .. d_k-1); v keeps the
//     half whose next index bit is v's bit at d_k and sends the other half, reducing what it
//     receives. Afterwards v holds the reduction of one segment (segment v far-first, segment
//     bit-reverse(v) near-first).
//  3. allgather by recursive doubling, the same pairs in reverse order, copying.
//  4. unfold: rank 2i+1 sends the full result to rank 2i.
// Bytes per active rank: 2 (p'-1)/p' n, plus n each way for a folded pair.
// Cost: [a + n b + n g] + sum_k (a + S_k b + S_k g) + sum_k (a + S_k b) + [a + n b], the
// brackets only when e > 0, S_k = largest group of p'/2^(k+1) segments; for p a power of two and
// n divisible by p: 2 lg p a + 2 (p-1)/p n b + (p-1)/p n g (either order: the orders differ in
// which link level carries the large exchanges).
// chunk_elems does not apply (every step already moves a distinct block). The schedule is
// generated one step at a time (RhdSteps below): stored, it was 460,000 steps on 16,384 ranks,
// of which the event simulator's XOR fold reads one rank's.
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

struct Fold {
  int p = 1;       // ranks
  int active = 1;  // p'
  int extra = 0;   // e
  // Real rank of new rank v.
  int real(int v) const { return v < extra ? 2 * v + 1 : v + extra; }
};

Fold fold_of(int p) {
  Fold f;
  f.p = p;
  f.active = floor_pow2(p);
  f.extra = p - f.active;
  return f;
}

// The distances of the exchange steps, in halving order.
enum class Order { far_first, near_first };
std::vector<int> distances(int active, Order order) {
  std::vector<int> d;
  for (int x = active / 2; x >= 1; x /= 2) d.push_back(x);
  if (order == Order::near_first) std::reverse(d.begin(), d.end());
  return d;
}

// First segment of the group new rank v holds before halving step k: the segments whose top k
// index bits (of lg p') are v's bits at distances ds[0..k-1].
std::size_t group_start(int v, const std::vector<int>& ds, std::size_t k) {
  std::size_t start = 0;
  const std::size_t bits = ds.size();
  for (std::size_t j = 0; j < k; ++j)
    if ((v & ds[j]) != 0) start |= std::size_t{1} << (bits - 1 - j);
  return start;
}

// Largest block of `segments` aligned segments among `parts` segments of count (the first one).
double span_bytes(std::size_t segments, int parts, std::size_t count, std::size_t elem_size) {
  const Block s = segments_span(0, segments, static_cast<std::size_t>(parts), count);
  return static_cast<double>(s.count * elem_size);
}

double exchange_cost(const RankLayout& layout, const Fold& f, std::size_t count, std::size_t elem_size,
                     const std::vector<int>& ds, std::size_t k, bool reduce, const LevelCosts& costs) {
  Levels levels(costs);
  for (int v = 0; v < f.active; ++v) levels.add(layout, f.real(v), f.real(v ^ ds[k]));
  const double bytes = span_bytes(static_cast<std::size_t>(f.active) >> (k + 1), f.active, count, elem_size);
  return message_time(levels, bytes, costs) + (reduce ? bytes * costs.gamma_us_per_byte : 0.0);
}

double fold_cost(const RankLayout& layout, const Fold& f, std::size_t count, std::size_t elem_size, bool reduce,
                 const LevelCosts& costs) {
  if (f.extra == 0 || count == 0) return 0;
  Levels levels(costs);
  for (int i = 0; i < f.extra; ++i) levels.add(layout, 2 * i, 2 * i + 1);
  const double bytes = static_cast<double>(count * elem_size);
  return message_time(levels, bytes, costs) + (reduce ? bytes * costs.gamma_us_per_byte : 0.0);
}

double cost_rhd_like(const RankLayout& layout, std::size_t count, std::size_t elem_size, bool fold, bool halving,
                     bool doubling, const LevelCosts& costs, Order order = Order::far_first) {
  const Fold f = fold_of(layout.nranks());
  if (count == 0) return 0;
  const std::vector<int> ds = distances(f.active, order);
  double t = fold ? fold_cost(layout, f, count, elem_size, true, costs) + fold_cost(layout, f, count, elem_size, false, costs)
                  : 0.0;
  for (std::size_t k = 0; k < ds.size(); ++k) {
    if (halving) t += exchange_cost(layout, f, count, elem_size, ds, k, true, costs);
    if (doubling) t += exchange_cost(layout, f, count, elem_size, ds, k, false, costs);
  }
  return t;
}

// The schedule, generated one step at a time (step_source.hpp; stored, it is materialize() of
// this, which drops the steps whose blocks are all empty, as when nothing is sent). Rank x's
// steps: for an allreduce on p not a power of two, the fold first (odd x < 2e receives from
// x - 1, even x < 2e sends to x + 1), then the exchanges of its new rank v (the halving steps,
// then the doubling ones, those the variant runs), then the unfold; an even x < 2e has the fold
// and the unfold only. In an exchange v sends its block to v xor d and receives its partner's;
// the pair's lower new rank lists its send first, the higher its receive first.
class RhdSteps final : public StepSource {
 public:
  RhdSteps(ScheduleHeader header, bool halving, bool doubling, Order order, int xor_period)
      : StepSource(std::move(header)),
        fold_(fold_of(this->header().nranks)),
        ds_(distances(fold_.active, order)),
        halving_(halving),
        doubling_(doubling),
        folds_(this->header().collective == Collective::allreduce),
        xor_period_(xor_period) {}

  std::size_t num_steps(int rank) const override {
    const int v = new_rank(rank);
    const std::size_t fold_steps = folds_ && rank < 2 * fold_.extra ? 2 : 0;
    return v < 0 ? fold_steps : exchange_steps() + fold_steps;
  }

  std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const override {
    scratch.clear();
    if (folds_ && rank < 2 * fold_.extra) {
      if (step == 0 || step == num_steps(rank) - 1) {
        fold(rank, step == 0, scratch);
        return scratch;
      }
      --step;  // the fold came first: an exchange of the odd rank's new rank
    }
    exchange(new_rank(rank), step, scratch);
    return scratch;
  }

  int xor_period() const override { return xor_period_; }

 private:
  // The new rank of real rank x (Fold::real's inverse); -1 for an even x < 2e, which only folds.
  int new_rank(int x) const {
    if (x < 2 * fold_.extra) return x % 2 == 1 ? x / 2 : -1;
    return x - fold_.extra;
  }
  std::size_t exchange_steps() const { return (halving_ ? ds_.size() : 0) + (doubling_ ? ds_.size() : 0); }

  // The op of rank x < 2e at the fold (`folding`) or the unfold: even x sends its whole buffer
  // to x + 1, which reduces it, and receives the result back from it.
  void fold(int x, bool folding, std::vector<Op>& out) const {
    const Block whole{0, header().count};
    if (whole.count == 0) return;
    if (x % 2 == 0)
      out.emplace_back(folding ? OpKind::send : OpKind::recv_copy, x + 1, whole);
    else
      out.emplace_back(folding ? OpKind::recv_reduce : OpKind::send, x - 1, whole);
  }

  // The ops of new rank v's exchange step j: halving step k = j (reducing), or doubling step
  // k = L - 1 - (j - L) (copying), over the p'/2^k segments of its group.
  void exchange(int v, std::size_t j, std::vector<Op>& out) const {
    const std::size_t halvings = halving_ ? ds_.size() : 0;
    const bool halving = j < halvings;
    const std::size_t k = halving ? j : ds_.size() - 1 - (j - halvings);
    const auto parts = static_cast<std::size_t>(fold_.active);
    const std::size_t half = parts >> (k + 1);
    const int d = ds_[k];
    // What new rank u sends: halving, the half its partner keeps; doubling, its own half.
    const auto block_of = [&](int u) {
      const bool send_upper = ((u & d) == 0) == halving;
      const std::size_t first = group_start(u, ds_, k) + (send_upper ? half : 0);
      return segments_span(first, first + half, parts, header().count);
    };
    const int w = v ^ d;
    const Block mine = block_of(v), theirs = block_of(w);
    const int peer = fold_.real(w);
    const OpKind receive = halving ? OpKind::recv_reduce : OpKind::recv_copy;
    if (v < w && mine.count > 0) out.emplace_back(OpKind::send, peer, mine);
    if (theirs.count > 0) out.emplace_back(receive, peer, theirs);
    if (v > w && mine.count > 0) out.emplace_back(OpKind::send, peer, mine);
  }

  Fold fold_;
  std::vector<int> ds_;
  bool halving_ = true;
  bool doubling_ = true;
  bool folds_ = true;  // an allreduce: extra ranks fold in first
  int xor_period_ = 0;
};

// Summing each step's slowest message is exact when every step's exchanges are all inside
// hosts or all across them with as many per host (hosts holding a power of two of ranks);
// otherwise ranks run ahead of each other and the sum overestimates.
bool steps_align_with_hosts(const RankLayout& layout) {
  return layout.nhosts() == 1 || (layout.is_uniform() && is_pow2(layout.max_ranks_per_host()));
}

std::unique_ptr<StepSource> generate_rhd_like(const std::string& id, Collective c, const RankLayout& layout,
                                              std::size_t count, bool halving, bool doubling, int xor_period,
                                              Order order = Order::far_first) {
  const int p = layout.nranks();
  if (p <= 0) throw Error("algorithm '" + id + "': needs at least one rank (got " + std::to_string(p) + ")");
  ScheduleHeader header{id, c, p, count, {}};
  if (c != Collective::allreduce)
    for (int r = 0; r < p; ++r)
      header.owned.push_back(segment_of(static_cast<std::size_t>(r), static_cast<std::size_t>(p), count));
  return std::make_unique<RhdSteps>(std::move(header), halving, doubling, order, xor_period);
}

// rhd and rhd_near on a power of two of ranks and equal segments (count divisible by p): rank
// r xor m runs rank r's exchanges with every peer xor m and equal blocks, so they declare XOR
// period 1 (StepSource::xor_period).
int rhd_xor_period(const RankLayout& layout, std::size_t count) {
  const int p = layout.nranks();
  return p > 1 && is_pow2(p) && count % static_cast<std::size_t>(p) == 0 ? 1 : 0;
}

}  // namespace

std::unique_ptr<StepSource> generate_rhd(const RankLayout& layout, std::size_t count, const AlgoOptions& /*options*/) {
  return generate_rhd_like("rhd", Collective::allreduce, layout, count, true, true, rhd_xor_period(layout, count));
}
std::unique_ptr<StepSource> generate_rhd_near(const RankLayout& layout, std::size_t count,
                                              const AlgoOptions& /*options*/) {
  return generate_rhd_like("rhd_near", Collective::allreduce, layout, count, true, true, rhd_xor_period(layout, count),
                           Order::near_first);
}
std::unique_ptr<StepSource> generate_reduce_scatter_rh(const RankLayout& layout, std::size_t count,
                                                       const AlgoOptions& /*options*/) {
  return generate_rhd_like("reduce_scatter_rh", Collective::reduce_scatter, layout, count, true, false, 0);
}
std::unique_ptr<StepSource> generate_allgather_rd(const RankLayout& layout, std::size_t count,
                                                  const AlgoOptions& /*options*/) {
  return generate_rhd_like("allgather_rd", Collective::allgather, layout, count, false, true, 0);
}

// Far first: exact on misaligned hosts too, as long as the hosts' NICs add no sharing (the
// halving's first, largest exchanges then all cross hosts alike); otherwise no closed form.
std::optional<double> cost_rhd(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                               const AlgoOptions& /*options*/, const LevelCosts& costs) {
  if (!steps_align_with_hosts(layout) && costs.beta_host_us_per_byte > 0) return std::nullopt;
  return cost_rhd_like(layout, elements_of(bytes, elem_size), elem_size, true, true, true, costs);
}

// Near first on misaligned hosts, the first steps mix levels and the sum overestimates (by up to
// 27% on 3 hosts of 3): no closed form there.
std::optional<double> cost_rhd_near(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                    const AlgoOptions& /*options*/, const LevelCosts& costs) {
  if (!steps_align_with_hosts(layout)) return std::nullopt;
  return cost_rhd_like(layout, elements_of(bytes, elem_size), elem_size, true, true, true, costs, Order::near_first);
}

// Reduce-scatter by recursive halving alone (p a power of two): step 2 above, rank r ends with
// segment r. lg p steps; bytes per rank (p-1)/p n; cost sum_k (a + S_k b + S_k g).
double cost_reduce_scatter_rh(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                              const AlgoOptions& /*options*/, const LevelCosts& costs) {
  return cost_rhd_like(layout, elements_of(bytes, elem_size), elem_size, false, true, false, costs);
}

// Allgather by recursive doubling alone (p a power of two): step 3 above, rank r starts with
// segment r. lg p steps; bytes per rank (p-1)/p n; cost sum_k (a + S_k b).
double cost_allgather_rd(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                         const AlgoOptions& /*options*/, const LevelCosts& costs) {
  return cost_rhd_like(layout, elements_of(bytes, elem_size), elem_size, false, false, true, costs);
}

}  // namespace colltune::coll::algo
