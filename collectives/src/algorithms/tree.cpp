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

// Calls f(t, parent, child, level k, chunk c) for every edge and chunk of a pipelined
// binomial phase; `delay(k, levels)` is the time step at which level-k edges carry chunk 0.
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

// The slowest edge of each level k of a binomial tree over `group` stands for the level (exact
// when hosts align with subtrees); `inter` when one of its edges crosses hosts.
struct LevelEdge {
  Wire wire;
  bool inter = false;
};

std::vector<LevelEdge> level_edges(const RankLayout& layout, const std::vector<int>& group, const LevelCosts& costs) {
  const int q = static_cast<int>(group.size());
  std::vector<LevelEdge> edges(static_cast<std::size_t>(ceil_log2(q)));
  for (std::size_t k = 0; k < edges.size(); ++k) {
    LevelEdge& e = edges[k];
    Levels crossing(costs);  // the level's edges that leave or enter one host share its NICs (a group, its trunk)
    for (int v = 0; v + (1 << k) < q; v += 2 << k)
      crossing.add(layout, group[static_cast<std::size_t>(v)], group[static_cast<std::size_t>(v + (1 << k))]);
    for (int v = 0; v + (1 << k) < q; v += 2 << k) {
      const int a = group[static_cast<std::size_t>(v)];
      const int b = group[static_cast<std::size_t>(v + (1 << k))];
      Wire w = wire(layout, a, b, costs);
      if (layout.host_of(a) != layout.host_of(b))
        w.beta = inter_beta(costs, crossing.crossing_per_host(), crossing.crossing_per_group());
      e.wire.alpha = std::max(e.wire.alpha, w.alpha);
      e.wire.beta = std::max(e.wire.beta, w.beta);
      e.inter = e.inter || layout.host_of(a) != layout.host_of(b);
    }
  }
  return edges;
}

}  // namespace

void binomial_reduce(ScheduleBuilder& b, const std::vector<int>& group, const Block& range, std::size_t chunk_elems) {
  const std::size_t rounds = chunk_count(range.count, chunk_elems);
  // A rank receives from all its children at time t and sends to its parent at the same t:
  // the child's transfers to v happen at steps where v itself sends an earlier chunk.
  for_each_transfer(group.size(), rounds, [](int k, int) { return k; },
                    [&](int t, int v, int child, int, std::size_t c) {
                      b.message(t, group[static_cast<std::size_t>(child)], group[static_cast<std::size_t>(v)],
                                chunk_of(range, c, chunk_elems), true);
                    });
}

void binomial_broadcast(ScheduleBuilder& b, const std::vector<int>& group, const Block& range,
                        std::size_t chunk_elems) {
  const std::size_t rounds = chunk_count(range.count, chunk_elems);
  for_each_transfer(group.size(), rounds, [](int k, int levels) { return levels - 1 - k; },
                    [&](int t, int v, int child, int, std::size_t c) {
                      b.message(t, group[static_cast<std::size_t>(v)], group[static_cast<std::size_t>(child)],
                                chunk_of(range, c, chunk_elems), false);
                    });
}

// The root's step at time t handles chunk t - delay(k) on its level-k edge. Its messages share
// its ejection (reduce) or injection (broadcast) port, one port per level when the machine has
// separate intra- and inter-host links; reduced chunks are combined in arrival order.
double binomial_phase_cost(const RankLayout& layout, const std::vector<int>& group, std::size_t count,
                           std::size_t elem_size, std::size_t chunk_elems, bool reduce, const LevelCosts& costs) {
  const int q = static_cast<int>(group.size());
  if (q < 2 || count == 0) return 0;
  const int levels = ceil_log2(q);
  const std::size_t rounds = chunk_count(count, chunk_elems);
  const Block range{0, count};
  const std::vector<LevelEdge> edge = level_edges(layout, group, costs);
  const bool one_port = !costs.separate_level_ports ||
                        std::all_of(edge.begin(), edge.end(), [&](const LevelEdge& e) { return e.inter == edge[0].inter; });
  const bool uniform = one_port && std::all_of(edge.begin(), edge.end(), [&](const LevelEdge& e) {
                         return e.wire.alpha == edge[0].wire.alpha && e.wire.beta == edge[0].wire.beta;
                       });
  const double gamma = reduce ? costs.gamma_us_per_byte : 0.0;
  if (uniform) {
    const double moved = static_cast<double>(levels) * static_cast<double>(count * elem_size);
    return static_cast<double>(rounds + static_cast<std::size_t>(levels) - 1) * edge[0].wire.alpha +
           moved * (edge[0].wire.beta + gamma);
  }
  double total = 0;
  const long long steps = static_cast<long long>(rounds) + levels - 1;
  for (long long t = 0; t < steps; ++t) {
    double port[2] = {0, 0};  // load of the root's port per level (index 1: inter, if separate)
    std::vector<std::pair<double, double>> arrivals;  // (alpha, bytes), then (arrival, bytes)
    std::vector<int> port_of;
    for (int k = 0; k < levels; ++k) {
      const long long c = t - (reduce ? k : levels - 1 - k);
      if (c < 0 || c >= static_cast<long long>(rounds)) continue;
      const LevelEdge& e = edge[static_cast<std::size_t>(k)];
      const double bytes = static_cast<double>(chunk_of(range, static_cast<std::size_t>(c), chunk_elems).count * elem_size);
      port_of.push_back(!one_port && e.inter ? 1 : 0);
      port[port_of.back()] += bytes * e.wire.beta;
      arrivals.emplace_back(e.wire.alpha, bytes);
    }
    for (std::size_t i = 0; i < arrivals.size(); ++i) arrivals[i].first += port[port_of[i]];
    std::sort(arrivals.begin(), arrivals.end());
    double done = 0;
    for (const auto& [arrive, bytes] : arrivals) done = std::max(done, arrive) + bytes * gamma;
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
