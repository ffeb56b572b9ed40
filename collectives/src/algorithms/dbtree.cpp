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
// this). Rank r's step t holds its messages of time step t in tree 0, then in tree 1
// (PipelinedTree::ops), each tree's in the order the tree lists them: by the sender's position, a sender's message up
// before its messages down, children in position order.
class DbtreeSteps final : public StepSource {
 public:
  DbtreeSteps(ScheduleHeader header, std::size_t chunk_elems) : StepSource(std::move(header)), chunk_(chunk_elems) {
    const int p = this->header().nranks;
    const std::size_t count = this->header().count;
    if (p < 2 || count == 0) return;
    const auto n = static_cast<std::size_t>(p);
    // Both halves run as many rounds as the first, the larger (the second's last chunk may be
    // empty: not sent).
    const std::size_t rounds = chunk_count(segment_of(0, 2, count).count, chunk_elems);
    for (int w = 0; w < 2; ++w) {
      BinaryTree shape = double_tree(p, w);
      PipelinedTree& tree = trees_[static_cast<std::size_t>(w)];
      tree.parent = std::move(shape.parent);
      tree.children = std::move(shape.children);
      tree.depth = std::move(shape.depth);
      tree.height = shape.height;
      tree.order.assign(n, 0);
      for (int v = 0; v < p; ++v) tree.order[static_cast<std::size_t>(double_tree_rank(w, v, p))] = v;
      tree.range = segment_of(static_cast<std::size_t>(w), 2, count);
      tree.rounds = rounds;
    }
    steps_ = rounds + 2 * static_cast<std::size_t>(trees_[0].height) - 1;
  }

  std::size_t num_steps(int /*rank*/) const override { return steps_; }

  // Tree 1 is tree 0 read from the other end (second_tree_rank: position v at rank p-1-v on an
  // even p), so rank p-1-r does in tree 1 what rank r does in tree 0, peers read from the other
  // end, on chunks of the same counts where the two halves are equal (an even count). A step
  // lists tree 0's ops before tree 1's and a tree has at most one op per peer and direction, so
  // rank p-1-r lists each peer's ops in reverse: as StepSource::mirrors_ranks declares.
  bool mirrors_ranks() const override { return header().nranks % 2 == 0 && header().count % 2 == 0; }

  std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const override {
    scratch.clear();
    if (steps_ == 0) return scratch;
    for (const PipelinedTree& tree : trees_) tree.ops(rank, static_cast<long long>(step), chunk_, scratch);
    return scratch;
  }

 private:
  std::size_t chunk_ = 0;
  std::array<PipelinedTree, 2> trees_;  // by rank; order: each rank's position
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
