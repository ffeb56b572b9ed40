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
// There is no closed form: a rank's ports carry different numbers of chunks in different steps
// of the pipeline, so the cost model prices the schedule itself (sim/pricer.hpp).
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"

namespace colltune::coll::algo {
namespace {


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
      const int me = double_tree_rank(which, v, pl.p);
      if (v != 0 && valid(t - (h - d))) f(me, double_tree_rank(which, pl.tree.parent[sv], pl.p), chunk(t - (h - d)), true);
      if (!valid(t - (h + d))) continue;
      for (int c : pl.tree.children[sv]) f(me, double_tree_rank(which, c, pl.p), chunk(t - (h + d)), false);
    }
  }
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

std::size_t dbtree_pipeline_pieces(const RankLayout& /*layout*/, const AlgoOptions& /*options*/) { return 2; }

int dbtree_depth(const RankLayout& layout, const AlgoOptions& /*options*/) {
  return layout.nranks() < 2 ? 0 : in_order_tree(layout.nranks()).height;
}

}  // namespace colltune::coll::algo
