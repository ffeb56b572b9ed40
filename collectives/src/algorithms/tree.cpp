// Binomial tree allreduce: pipelined binomial reduce to rank 0, then pipelined binomial
// broadcast from rank 0.
//
// Positions v = 0..q-1 of a group, L = ceil(lg q). v's children are v + 2^k for k below the
// lowest set bit of v (every k < L for the root), its parent is v - 2^lowbit(v) (binomial_*
// helpers in trees.hpp). The buffer is cut into R chunks of chunk_elems.
//  - reduce, time steps t = 0..R+L-2: every edge at level k carries chunk t-k upwards (the
//    child reduces nothing more into it later: its own children, at levels < k, delivered
//    chunk t-k in earlier steps);
//  - broadcast, time steps t = 0..R+L-2: every edge at level k carries chunk t-(L-1-k)
//    downwards, so a chunk reaches the children of the largest subtree first.
// Bytes on the wire: each non-root rank sends n up and receives n down; the root receives and
// sends L n. The root handles one chunk per level per step, so it is the critical path:
// reduce (R+L-1) a + L n (b + g), broadcast (R+L-1) a + L n b; with one chunk the textbook
// 2 lg p a + 2 n lg p b + n lg p g.
#include <algorithm>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"

namespace colltune::coll::algo {
namespace {

Block range_chunk(const Block& range, std::size_t c, std::size_t chunk_elems) {
  return chunk_of(range, c, chunk_elems);
}

// Calls f(t, parent, child, level k, chunk c) for every edge and chunk of a pipelined
// binomial phase; `offset(k)` is the delay of level-k edges.
template <class Delay, class F>
void for_each_transfer(std::size_t q, std::size_t rounds, Delay delay, F f) {
  const int levels = ceil_log2(static_cast<int>(q));
  const long long steps = static_cast<long long>(rounds) + levels - 1;
  for (long long t = 0; t < steps; ++t) {
    for (int v = 0; v < static_cast<int>(q); ++v) {
      for (int child : binomial_children(v, static_cast<int>(q))) {
        const int k = lowest_bit(child - v);
        const long long c = t - delay(k, levels);
        if (c >= 0 && c < static_cast<long long>(rounds)) f(static_cast<int>(t), v, child, k, static_cast<std::size_t>(c));
      }
    }
  }
}

}  // namespace

void binomial_reduce(ScheduleBuilder& b, const std::vector<int>& group, const Block& range, std::size_t chunk_elems) {
  const std::size_t rounds = chunk_count(range.count, chunk_elems);
  // A rank receives from all its children at time t and sends to its parent at the same t:
  // the child's transfers to v happen at steps where v itself sends an earlier chunk.
  for_each_transfer(group.size(), rounds, [](int k, int) { return k; },
                    [&](int t, int v, int child, int, std::size_t c) {
                      b.message(t, group[static_cast<std::size_t>(child)], group[static_cast<std::size_t>(v)],
                                range_chunk(range, c, chunk_elems), true);
                    });
}

void binomial_broadcast(ScheduleBuilder& b, const std::vector<int>& group, const Block& range,
                        std::size_t chunk_elems) {
  const std::size_t rounds = chunk_count(range.count, chunk_elems);
  for_each_transfer(group.size(), rounds, [](int k, int levels) { return levels - 1 - k; },
                    [&](int t, int v, int child, int, std::size_t c) {
                      b.message(t, group[static_cast<std::size_t>(v)], group[static_cast<std::size_t>(child)],
                                range_chunk(range, c, chunk_elems), false);
                    });
}

// The root's step at time t handles chunk t - delay(k) on its level-k edge. All its messages
// share its ejection (reduce) or injection (broadcast) port; reduced chunks are combined in
// arrival order (intra-host messages arrive first when alpha_intra <= alpha_inter).
double binomial_phase_cost(const RankLayout& layout, const std::vector<int>& group, std::size_t count,
                           std::size_t elem_size, std::size_t chunk_elems, bool reduce, const LevelCosts& costs) {
  const int q = static_cast<int>(group.size());
  if (q < 2 || count == 0) return 0;
  const int levels = ceil_log2(q);
  const std::size_t rounds = chunk_count(count, chunk_elems);
  const Block range{0, count};
  std::vector<Wire> edge(static_cast<std::size_t>(levels));
  bool uniform = true;
  for (int k = 0; k < levels; ++k) {
    // The slowest edge of level k stands for the level (exact when hosts align with subtrees).
    Wire& w = edge[static_cast<std::size_t>(k)];
    for (int v = 0; v + (1 << k) < q; v += 2 << k) {
      const Wire e = wire(layout, group[static_cast<std::size_t>(v)], group[static_cast<std::size_t>(v + (1 << k))], costs);
      w.alpha = std::max(w.alpha, e.alpha);
      w.beta = std::max(w.beta, e.beta);
    }
    uniform = uniform && edge[static_cast<std::size_t>(k)].alpha == edge[0].alpha &&
              edge[static_cast<std::size_t>(k)].beta == edge[0].beta;
  }
  const double gamma = reduce ? costs.gamma_us_per_byte : 0.0;
  if (uniform) {
    const double moved = static_cast<double>(levels) * static_cast<double>(count * elem_size);
    return static_cast<double>(rounds + static_cast<std::size_t>(levels) - 1) * edge[0].alpha +
           moved * (edge[0].beta + gamma);
  }
  double total = 0;
  const long long steps = static_cast<long long>(rounds) + levels - 1;
  for (long long t = 0; t < steps; ++t) {
    double port = 0;
    std::vector<std::pair<double, double>> arrivals;  // (alpha, bytes)
    for (int k = 0; k < levels; ++k) {
      const long long c = t - (reduce ? k : levels - 1 - k);
      if (c < 0 || c >= static_cast<long long>(rounds)) continue;
      const double bytes = static_cast<double>(range_chunk(range, static_cast<std::size_t>(c), chunk_elems).count * elem_size);
      port += bytes * edge[static_cast<std::size_t>(k)].beta;
      arrivals.emplace_back(edge[static_cast<std::size_t>(k)].alpha, bytes);
    }
    std::sort(arrivals.begin(), arrivals.end());
    double done = 0;
    for (const auto& [alpha, bytes] : arrivals) done = std::max(done, alpha + port) + bytes * gamma;
    total += done;
  }
  return total;
}

Schedule build_tree(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  const int p = layout.nranks();
  ScheduleBuilder b("tree", Collective::allreduce, p, count);
  const std::vector<int> group = all_ranks(p);
  binomial_reduce(b, group, Block{0, count}, options.chunk_elems);
  b.begin_phase();
  binomial_broadcast(b, group, Block{0, count}, options.chunk_elems);
  return b.finish();
}

double cost_tree(const RankLayout& layout, std::size_t bytes, std::size_t elem_size, const AlgoOptions& options,
                 const LevelCosts& costs) {
  const std::size_t count = elements_of(bytes, elem_size);
  const std::vector<int> group = all_ranks(layout.nranks());
  return binomial_phase_cost(layout, group, count, elem_size, options.chunk_elems, true, costs) +
         binomial_phase_cost(layout, group, count, elem_size, options.chunk_elems, false, costs);
}

}  // namespace colltune::coll::algo
