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
// chunk_elems does not apply (every step already moves a distinct block).
#include <algorithm>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"

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

// Halving (reduce) or doubling (copy) exchange of step k, time step t: the group of p'/2^k
// segments splits in halves of h = p'/2^(k+1); v keeps the half its bit at d_k names.
void exchange(ScheduleBuilder& b, const Fold& f, std::size_t count, const std::vector<int>& ds, std::size_t k, int t,
              bool halving) {
  const auto parts = static_cast<std::size_t>(f.active);
  const std::size_t half = parts >> (k + 1);
  const int d = ds[k];
  for (int v = 0; v < f.active; ++v) {
    const int partner = v ^ d;
    const std::size_t lo = group_start(v, ds, k);
    // Halving: send the partner's half. Doubling: send my own half.
    const bool send_upper = ((v & d) == 0) == halving;
    const std::size_t first = lo + (send_upper ? half : 0);
    b.message(t, f.real(v), f.real(partner), segments_span(first, first + half, parts, count), halving);
  }
}

void fold_messages(ScheduleBuilder& b, const Fold& f, std::size_t count, int t, bool fold) {
  for (int i = 0; i < f.extra; ++i) {
    if (fold) b.message(t, 2 * i, 2 * i + 1, Block{0, count}, true);
    else b.message(t, 2 * i + 1, 2 * i, Block{0, count}, false);
  }
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

// Steps 2 and/or 3 with an optional fold around them; t counts time steps.
Schedule build_rhd_like(const std::string& id, Collective c, const RankLayout& layout, std::size_t count,
                        bool halving, bool doubling, Order order = Order::far_first) {
  const int p = layout.nranks();
  const Fold f = fold_of(p);
  const std::vector<int> ds = distances(f.active, order);
  ScheduleBuilder b(id, c, p, count);
  int t = 0;
  if (c == Collective::allreduce) fold_messages(b, f, count, t++, true);
  if (halving) {
    for (std::size_t k = 0; k < ds.size(); ++k) exchange(b, f, count, ds, k, t++, true);
  }
  if (doubling) {
    for (std::size_t k = ds.size(); k-- > 0;) exchange(b, f, count, ds, k, t++, false);
  }
  if (c == Collective::allreduce) fold_messages(b, f, count, t, false);
  if (c != Collective::allreduce) {
    std::vector<Block> owned;
    for (int r = 0; r < p; ++r) owned.push_back(segment_of(static_cast<std::size_t>(r), static_cast<std::size_t>(p), count));
    b.set_owned(std::move(owned));
  }
  return b.finish();
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

// Summing each step's slowest message is exact when every step's exchanges are all inside
// hosts or all across them with as many per host (hosts holding a power of two of ranks);
// otherwise ranks run ahead of each other and the sum overestimates.
bool steps_align_with_hosts(const RankLayout& layout) {
  return layout.nhosts() == 1 || (layout.is_uniform() && is_pow2(layout.max_ranks_per_host()));
}

}  // namespace

Schedule build_rhd(const RankLayout& layout, std::size_t count, const AlgoOptions& /*options*/) {
  return build_rhd_like("rhd", Collective::allreduce, layout, count, true, true);
}

// Far first: exact on misaligned hosts too, as long as the hosts' NICs add no sharing (the
// halving's first, largest exchanges then all cross hosts alike); otherwise no closed form.
std::optional<double> cost_rhd(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                               const AlgoOptions& /*options*/, const LevelCosts& costs) {
  if (!steps_align_with_hosts(layout) && costs.beta_host_us_per_byte > 0) return std::nullopt;
  return cost_rhd_like(layout, elements_of(bytes, elem_size), elem_size, true, true, true, costs);
}

Schedule build_rhd_near(const RankLayout& layout, std::size_t count, const AlgoOptions& /*options*/) {
  return build_rhd_like("rhd_near", Collective::allreduce, layout, count, true, true, Order::near_first);
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
Schedule build_reduce_scatter_rh(const RankLayout& layout, std::size_t count, const AlgoOptions& /*options*/) {
  return build_rhd_like("reduce_scatter_rh", Collective::reduce_scatter, layout, count, true, false);
}

double cost_reduce_scatter_rh(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                              const AlgoOptions& /*options*/, const LevelCosts& costs) {
  return cost_rhd_like(layout, elements_of(bytes, elem_size), elem_size, false, true, false, costs);
}

// Allgather by recursive doubling alone (p a power of two): step 3 above, rank r starts with
// segment r. lg p steps; bytes per rank (p-1)/p n; cost sum_k (a + S_k b).
Schedule build_allgather_rd(const RankLayout& layout, std::size_t count, const AlgoOptions& /*options*/) {
  return build_rhd_like("allgather_rd", Collective::allgather, layout, count, false, true);
}

double cost_allgather_rd(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                         const AlgoOptions& /*options*/, const LevelCosts& costs) {
  return cost_rhd_like(layout, elements_of(bytes, elem_size), elem_size, false, false, true, costs);
}

}  // namespace colltune::coll::algo
