// Recursive halving-doubling allreduce (Rabenseifner; Thakur, Rabenseifner & Gropp 2005).
//
// p' = largest power of two <= p, e = p - p' extra ranks. Steps:
//  1. fold (only when e > 0): for i < e, rank 2i sends its whole buffer to rank 2i+1, which
//     reduces it; the e even ranks below 2e then wait. The p' active ranks get new ranks
//     (odd r < 2e -> r/2, r >= 2e -> r - e).
//  2. reduce-scatter by recursive halving, lg p' steps: in step k the distance is
//     d = p'/2^(k+1); new rank v exchanges with v xor d; both hold d*2 segments of p' balanced
//     segments, v keeps the lower half when (v & d) == 0 and sends the other half, reducing what
//     it receives. Afterwards new rank v holds the reduction of segment v.
//  3. allgather by recursive doubling, the same pairs in reverse order, copying.
//  4. unfold: rank 2i+1 sends the full result to rank 2i.
// Bytes per active rank: 2 (p'-1)/p' n, plus n each way for a folded pair.
// Cost: [a + n b + n g] + sum_k (a + S_k b + S_k g) + sum_k (a + S_k b) + [a + n b], the
// brackets only when e > 0, S_k = largest group of d_k segments; for p a power of two and n
// divisible by p: 2 lg p a + 2 (p-1)/p n b + (p-1)/p n g.
// chunk_elems does not apply (every step already moves a distinct block).
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

// Segments held by new rank v before the halving step with distance d: an aligned group of 2d.
std::size_t group_start(int v, int d) { return static_cast<std::size_t>(v & ~(2 * d - 1)); }

// Halving (reduce) or doubling (copy) exchange at distance d, time step t.
void exchange(ScheduleBuilder& b, const Fold& f, std::size_t count, int d, int t, bool halving) {
  const auto parts = static_cast<std::size_t>(f.active);
  const auto sd = static_cast<std::size_t>(d);
  for (int v = 0; v < f.active; ++v) {
    const int partner = v ^ d;
    const std::size_t lo = group_start(v, d);
    // Halving: send the partner's half. Doubling: send my own half.
    const bool send_upper = ((v & d) == 0) == halving;
    const std::size_t first = lo + (send_upper ? sd : 0);
    b.message(t, f.real(v), f.real(partner), segments_span(first, first + sd, parts, count), halving);
  }
}

void fold_messages(ScheduleBuilder& b, const Fold& f, std::size_t count, int t, bool fold) {
  for (int i = 0; i < f.extra; ++i) {
    if (fold) b.message(t, 2 * i, 2 * i + 1, Block{0, count}, true);
    else b.message(t, 2 * i + 1, 2 * i, Block{0, count}, false);
  }
}

// Largest block of d aligned segments among `parts` segments of count (the first one).
double span_bytes(int d, int parts, std::size_t count, std::size_t elem_size) {
  const Block s = segments_span(0, static_cast<std::size_t>(d), static_cast<std::size_t>(parts), count);
  return static_cast<double>(s.count * elem_size);
}

double exchange_cost(const RankLayout& layout, const Fold& f, std::size_t count, std::size_t elem_size, int d,
                     bool reduce, const LevelCosts& costs) {
  Levels levels;
  for (int v = 0; v < f.active; ++v) levels.add(layout, f.real(v), f.real(v ^ d));
  const double bytes = span_bytes(d, f.active, count, elem_size);
  return message_time(levels, bytes, costs) + (reduce ? bytes * costs.gamma_us_per_byte : 0.0);
}

double fold_cost(const RankLayout& layout, const Fold& f, std::size_t count, std::size_t elem_size, bool reduce,
                 const LevelCosts& costs) {
  if (f.extra == 0 || count == 0) return 0;
  Levels levels;
  for (int i = 0; i < f.extra; ++i) levels.add(layout, 2 * i, 2 * i + 1);
  const double bytes = static_cast<double>(count * elem_size);
  return message_time(levels, bytes, costs) + (reduce ? bytes * costs.gamma_us_per_byte : 0.0);
}

// Steps 2 and/or 3 with an optional fold around them; t counts time steps.
Schedule build_rhd_like(const std::string& id, Collective c, const RankLayout& layout, std::size_t count,
                        bool halving, bool doubling) {
  const int p = layout.nranks();
  const Fold f = fold_of(p);
  ScheduleBuilder b(id, c, p, count);
  int t = 0;
  if (c == Collective::allreduce) fold_messages(b, f, count, t++, true);
  if (halving) {
    for (int d = f.active / 2; d >= 1; d /= 2) exchange(b, f, count, d, t++, true);
  }
  if (doubling) {
    for (int d = 1; d < f.active; d *= 2) exchange(b, f, count, d, t++, false);
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
                     bool doubling, const LevelCosts& costs) {
  const Fold f = fold_of(layout.nranks());
  if (count == 0) return 0;
  double t = fold ? fold_cost(layout, f, count, elem_size, true, costs) + fold_cost(layout, f, count, elem_size, false, costs)
                  : 0.0;
  for (int d = f.active / 2; d >= 1; d /= 2) {
    if (halving) t += exchange_cost(layout, f, count, elem_size, d, true, costs);
    if (doubling) t += exchange_cost(layout, f, count, elem_size, d, false, costs);
  }
  return t;
}

}  // namespace

Schedule build_rhd(const RankLayout& layout, std::size_t count, const AlgoOptions& /*options*/) {
  return build_rhd_like("rhd", Collective::allreduce, layout, count, true, true);
}

double cost_rhd(const RankLayout& layout, std::size_t bytes, std::size_t elem_size, const AlgoOptions& /*options*/,
                const LevelCosts& costs) {
  return cost_rhd_like(layout, elements_of(bytes, elem_size), elem_size, true, true, true, costs);
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
