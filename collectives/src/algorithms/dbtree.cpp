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
#include <array>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

// The schedule, generated one step at a time (step_source.hpp; stored, it is materialize() of
// this). Rank r's step t holds its messages of time step t in tree 0, then in tree 1 (tree_ops),
// each tree's in the order the tree lists them: by the sender's position, a sender's message up
// before its messages down, children in position order.
class DbtreeSteps final : public StepSource {
 public:
  DbtreeSteps(ScheduleHeader header, std::size_t chunk_elems) : StepSource(std::move(header)), chunk_(chunk_elems) {
    const int p = this->header().nranks;
    const std::size_t count = this->header().count;
    if (p < 2 || count == 0) return;
    const auto n = static_cast<std::size_t>(p);
    for (int w = 0; w < 2; ++w) {
      Tree& tree = trees_[static_cast<std::size_t>(w)];
      tree.ranks = double_tree(p, w);
      tree.half = segment_of(static_cast<std::size_t>(w), 2, count);
      tree.position.assign(n, 0);
      for (int v = 0; v < p; ++v) tree.position[static_cast<std::size_t>(double_tree_rank(w, v, p))] = v;
    }
    height_ = trees_[0].ranks.height;
    // Both halves run as many rounds as the first, the larger (the second's last chunk may be
    // empty: not sent).
    rounds_ = static_cast<long long>(chunk_count(trees_[0].half.count, chunk_elems));
    steps_ = static_cast<std::size_t>(rounds_ + 2 * height_ - 1);
  }

  std::size_t num_steps(int /*rank*/) const override { return steps_; }

  std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const override {
    scratch.clear();
    if (steps_ == 0) return scratch;
    for (const Tree& tree : trees_) tree_ops(tree, rank, static_cast<long long>(step), scratch);
    return scratch;
  }

 private:
  struct Tree {
    BinaryTree ranks;           // double_tree: by rank, children in position order
    std::vector<int> position;  // each rank's position
    Block half;                 // the half of the buffer it reduces
  };

  // Rank r's ops in `tree` at time step t. A rank at depth d sends chunk t-(H-d) up to its
  // parent, which reduces it, and chunk t-(H+d) down to its children, which copy it; so it
  // receives chunk t-(H+d-1) from its parent and chunk t-(H-d-1) from each child.
  void tree_ops(const Tree& tree, int r, long long t, std::vector<Op>& out) const {
    const auto rr = static_cast<std::size_t>(r);
    const long long h = height_;
    const long long d = tree.ranks.depth[rr];
    // Its chunks this step run from t-(H+d) (down) to t-(H-d-1) (up from the children).
    if (t - (h - d - 1) < 0 || t - (h + d) >= rounds_) return;
    const auto chunk = [&](long long c) -> Block {
      if (c < 0 || c >= rounds_) return Block{0, 0};
      return chunk_of(tree.half, static_cast<std::size_t>(c), chunk_);
    };
    const int parent = tree.ranks.parent[rr];
    const std::vector<int>& children = tree.ranks.children[rr];
    // The other senders' ops (the parent's and the children's), in position order.
    std::array<Op, 3> others;
    std::array<int, 3> at{};
    std::size_t n = 0;
    const auto other = [&](int from, OpKind kind, const Block& block) {
      if (block.count == 0) return;
      const int v = tree.position[static_cast<std::size_t>(from)];
      std::size_t j = n++;
      for (; j > 0 && v < at[j - 1]; --j) others[j] = others[j - 1], at[j] = at[j - 1];
      others[j] = Op{kind, from, block};
      at[j] = v;
    };
    if (parent >= 0) other(parent, OpKind::recv_copy, chunk(t - (h + d - 1)));
    const Block up = chunk(t - (h - d - 1));
    for (int c : children) other(c, OpKind::recv_reduce, up);
    const int mine = tree.position[rr];
    std::size_t i = 0;
    for (; i < n && at[i] < mine; ++i) out.push_back(others[i]);
    if (parent >= 0) {
      const Block sent = chunk(t - (h - d));
      if (sent.count > 0) out.emplace_back(OpKind::send, parent, sent);
    }
    const Block down = chunk(t - (h + d));
    if (down.count > 0)
      for (int c : children) out.emplace_back(OpKind::send, c, down);
    for (; i < n; ++i) out.push_back(others[i]);
  }

  std::size_t chunk_ = 0;
  std::array<Tree, 2> trees_;
  long long height_ = 0;
  long long rounds_ = 0;
  std::size_t steps_ = 0;
};

}  // namespace

std::unique_ptr<StepSource> generate_dbtree(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  if (layout.nranks() <= 0)
    throw Error("algorithm 'dbtree': needs at least one rank (got " + std::to_string(layout.nranks()) + ")");
  return std::make_unique<DbtreeSteps>(ScheduleHeader{"dbtree", Collective::allreduce, layout.nranks(), count, {}},
                                       options.chunk_elems);
}

std::size_t dbtree_pipeline_pieces(const RankLayout& /*layout*/, const AlgoOptions& /*options*/) { return 2; }

int dbtree_depth(const RankLayout& layout, const AlgoOptions& /*options*/) {
  return layout.nranks() < 2 ? 0 : in_order_tree(layout.nranks()).height;
}

}  // namespace colltune::coll::algo
