// Double binary tree allreduce (Sanders, Speck & Traeff 2009; NCCL 2.4's "tree").
//
// Two binary trees over the p ranks (in_order_tree: root 0 with a single child, every odd
// position a leaf); the second maps position v to rank second_tree_rank(v, p), so a leaf of
// one tree is interior in the other. Tree 0 reduces and broadcasts the first half of the
// buffer, tree 1 the second half, both pipelined in chunks of chunk_elems (R chunks per half,
// tree height H), in one sequence of time steps t = 0..R+2H-2:
//  - reduce: a node at depth d >= 1 sends chunk t-(H-d) of its half to its parent, which
//    reduces it (its children delivered that chunk one step earlier);
//  - broadcast: a node at depth d sends chunk t-(H+d) to its children, which copy it.
// Bytes on the wire: every non-root node sends n/2 up and receives n/2 down in each tree; an
// interior node with two children receives n and sends n in its interior tree. In the
// steady state an interior rank moves 4 chunks in and 4 chunks out per step (two children up,
// parent up, parent down, two children down, plus its leaf role in the other tree) and
// reduces 2 chunks, so the time tends to 2 n b + n g for large n, with R+2H-1 latencies.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"

namespace colltune::coll::algo {
namespace {

int tree_rank(int tree, int v, int p) { return tree == 0 ? v : second_tree_rank(v, p); }

struct Plan {
  int p = 0;
  std::size_t count = 0;
  std::size_t chunk_elems = 0;
  BinaryTree tree;
  long long height = 0;
  std::size_t rounds = 0;
  long long steps() const { return static_cast<long long>(rounds) + 2 * height - 1; }
};

Plan plan_of(int p, std::size_t count, std::size_t chunk_elems) {
  Plan pl;
  pl.p = p;
  pl.count = count;
  pl.chunk_elems = chunk_elems;
  pl.tree = in_order_tree(p);
  pl.height = pl.tree.height;
  pl.rounds = chunk_count(segment_of(0, 2, count).count, chunk_elems);
  return pl;
}

// Calls f(from, to, block, reduce) for every message of time step t, in a fixed order.
template <class F>
void messages_at(const Plan& pl, long long t, F f) {
  auto valid = [&](long long c) { return c >= 0 && c < static_cast<long long>(pl.rounds); };
  const long long h = pl.height;
  for (int which = 0; which < 2; ++which) {
    const Block half = segment_of(static_cast<std::size_t>(which), 2, pl.count);
    auto chunk = [&](long long c) { return chunk_of(half, static_cast<std::size_t>(c), pl.chunk_elems); };
    for (int v = 0; v < pl.p; ++v) {
      const auto sv = static_cast<std::size_t>(v);
      const long long d = pl.tree.depth[sv];
      const int me = tree_rank(which, v, pl.p);
      if (v != 0 && valid(t - (h - d))) f(me, tree_rank(which, pl.tree.parent[sv], pl.p), chunk(t - (h - d)), true);
      if (!valid(t - (h + d))) continue;
      for (int c : pl.tree.children[sv]) f(me, tree_rank(which, c, pl.p), chunk(t - (h + d)), false);
    }
  }
}

// Buffers of one cost_dbtree call, reused by every time step so a step allocates nothing
// once they have grown (the tuner prices thousands of candidates).
struct Scratch {
  struct Msg { std::size_t from, to; double bytes; Wire w; bool reduce; };
  std::vector<Msg> msgs;
  std::vector<double> begin, work, out, in, end, left, before;
  std::vector<std::vector<std::size_t>> sends, recvs;
  std::vector<std::vector<std::pair<double, double>>> reduces;
  std::vector<std::size_t> order, active, still;
};

// Processor sharing: finish times of the messages `idx` through one port that shares its
// bandwidth equally among those transmitting; message k begins at begin[k] and needs work[k]
// us alone on the port. Written to finish[k]. Uses s.order/left/active/still as scratch
// (s.left sized to begin.size() by the caller; only the entries of idx are read).
void share_port(const std::vector<std::size_t>& idx, const std::vector<double>& begin, const std::vector<double>& work,
                std::vector<double>& finish, Scratch& s) {
  std::vector<std::size_t>& order = s.order;
  order.assign(idx.begin(), idx.end());
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return begin[a] < begin[b]; });
  std::vector<double>& left = s.left;
  for (std::size_t k : idx) left[k] = work[k];
  std::vector<std::size_t>& active = s.active;
  std::vector<std::size_t>& still = s.still;
  active.clear();
  double t = 0;
  std::size_t next = 0;
  while (next < order.size() || !active.empty()) {
    if (active.empty()) t = std::max(t, begin[order[next]]);
    for (; next < order.size() && begin[order[next]] <= t; ++next) {
      if (left[order[next]] > 0) active.push_back(order[next]);
      else finish[order[next]] = t;
    }
    if (active.empty()) continue;
    double least = left[active[0]];
    for (std::size_t k : active) least = std::min(least, left[k]);
    const auto m = static_cast<double>(active.size());
    if (next < order.size() && begin[order[next]] < t + least * m) {
      for (std::size_t k : active) left[k] -= (begin[order[next]] - t) / m;
      t = begin[order[next]];
      continue;
    }
    t += least * m;
    still.clear();
    for (std::size_t k : active) {
      if (left[k] <= least) finish[k] = t;
      else {
        left[k] -= least;
        still.push_back(k);
      }
    }
    active.swap(still);
  }
}

// Advances every rank's clock `clock[r]` (end of its previous step) over time step t under
// the machine model: a message begins when both ranks have started the step, each rank's
// injection (sends) and ejection (receives) port is shared equally among the messages
// transmitting through it, a message arrives alpha after it has left its sender's port and
// entered its receiver's, and reduced chunks are combined in arrival order. Ranks without
// messages at t keep their clock.
void advance(const Plan& pl, long long t, const RankLayout& layout, std::size_t elem_size, const LevelCosts& costs,
             std::vector<double>& clock, Scratch& s) {
  const auto n = static_cast<std::size_t>(pl.p);
  auto& msgs = s.msgs;
  msgs.clear();
  messages_at(pl, t, [&](int from, int to, const Block& blk, bool reduce) {
    if (blk.count == 0) return;
    msgs.push_back({static_cast<std::size_t>(from), static_cast<std::size_t>(to), static_cast<double>(blk.count * elem_size),
                    wire(layout, from, to, costs), reduce});
  });
  s.begin.clear();
  s.work.clear();
  s.out.assign(msgs.size(), 0.0);
  s.in.assign(msgs.size(), 0.0);
  s.left.resize(msgs.size());
  // Ports: one per rank and direction, or one per rank, direction and level when the machine
  // has separate intra- and inter-host links (NVLink and NIC).
  s.sends.resize(2 * n);
  s.recvs.resize(2 * n);
  for (std::size_t r = 0; r < 2 * n; ++r) {
    s.sends[r].clear();
    s.recvs[r].clear();
  }
  for (std::size_t k = 0; k < msgs.size(); ++k) {
    s.begin.push_back(std::max(clock[msgs[k].from], clock[msgs[k].to]));
    s.work.push_back(msgs[k].bytes * msgs[k].w.beta);
    const std::size_t level = costs.separate_level_ports && layout.host_of(static_cast<int>(msgs[k].from)) !=
                                                                layout.host_of(static_cast<int>(msgs[k].to))
                                  ? 1
                                  : 0;
    s.sends[2 * msgs[k].from + level].push_back(k);
    s.recvs[2 * msgs[k].to + level].push_back(k);
  }
  for (std::size_t r = 0; r < 2 * n; ++r) {
    if (!s.sends[r].empty()) share_port(s.sends[r], s.begin, s.work, s.out, s);
    if (!s.recvs[r].empty()) share_port(s.recvs[r], s.begin, s.work, s.in, s);
  }
  s.end.assign(clock.begin(), clock.end());
  s.reduces.resize(n);
  for (std::size_t r = 0; r < n; ++r) s.reduces[r].clear();
  for (std::size_t k = 0; k < msgs.size(); ++k) {
    const Scratch::Msg& m = msgs[k];
    const double arrive = m.w.alpha + std::max(s.out[k], s.in[k]);
    s.end[m.from] = std::max(s.end[m.from], arrive);
    s.end[m.to] = std::max(s.end[m.to], arrive);
    if (m.reduce) s.reduces[m.to].emplace_back(arrive, m.bytes);
  }
  for (std::size_t r = 0; r < n; ++r) {
    std::sort(s.reduces[r].begin(), s.reduces[r].end());
    double done = clock[r];
    for (const auto& [arrive, bytes] : s.reduces[r]) done = std::max(done, arrive) + bytes * costs.gamma_us_per_byte;
    clock[r] = std::max(s.end[r], done);
  }
}

// True when every clock moved by the same amount (the pipeline's steady state).
bool uniform_shift(const std::vector<double>& before, const std::vector<double>& after, double& shift) {
  shift = after[0] - before[0];
  for (std::size_t r = 1; r < after.size(); ++r) {
    if (std::abs((after[r] - before[r]) - shift) > 1e-12 * std::max(1.0, std::abs(after[r]))) return false;
  }
  return true;
}

}  // namespace

Schedule build_dbtree(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  const int p = layout.nranks();
  ScheduleBuilder b("dbtree", Collective::allreduce, p, count);
  if (p < 2 || count == 0) return b.finish();
  const Plan pl = plan_of(p, count, options.chunk_elems);
  for (long long t = 0; t < pl.steps(); ++t) {
    messages_at(pl, t, [&](int from, int to, const Block& blk, bool reduce) {
      b.message(static_cast<int>(t), from, to, blk, reduce);
    });
  }
  return b.finish();
}

// Steps the clocks of all ranks through the R+2H-1 time steps (the same model the event
// simulator and tests/schedules' pricer apply to the built schedule, so the hint is exact).
// Steps 2H-1..R-2 move only full chunks, so the step map is the same; it is max-plus linear,
// so once one such step shifts every clock by the same amount, all later ones do too and they
// are skipped in one jump. Cost O(p H) per call for long pipelines.
double cost_dbtree(const RankLayout& layout, std::size_t bytes, std::size_t elem_size, const AlgoOptions& options,
                   const LevelCosts& costs) {
  const int p = layout.nranks();
  const std::size_t count = elements_of(bytes, elem_size);
  if (p < 2 || count == 0) return 0;
  const Plan pl = plan_of(p, count, options.chunk_elems);
  const long long first_steady = 2 * pl.height - 1;
  const long long last_steady = static_cast<long long>(pl.rounds) - 2;
  std::vector<double> clock(static_cast<std::size_t>(p), 0.0);
  Scratch scratch;
  for (long long t = 0; t < pl.steps(); ++t) {
    scratch.before.assign(clock.begin(), clock.end());
    advance(pl, t, layout, elem_size, costs, clock, scratch);
    double shift = 0;
    if (t > first_steady && t < last_steady && uniform_shift(scratch.before, clock, shift)) {
      for (double& c : clock) c += shift * static_cast<double>(last_steady - t);
      t = last_steady;
    }
  }
  return *std::max_element(clock.begin(), clock.end());
}

}  // namespace colltune::coll::algo
