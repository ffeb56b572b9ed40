#pragma once
// Tree shapes, as positions 0..q-1 (tests/collectives/schedules/test_index_math.cpp checks them).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "colltune/collectives/schedule.hpp"

namespace colltune::coll::algo {

// Binomial tree rooted at 0: the parent of v > 0 is v with its lowest set bit cleared.
int binomial_parent(int v);
// Children of v, ascending: v + 2^k for every k below v's lowest set bit (every k for the
// root) with v + 2^k < q.
std::vector<int> binomial_children(int v, int q);

// In-order binary tree over positions 0..q-1 with root 0 and a single child below it (the
// shape of NCCL's "btree"): a position v > 0 with lowest set bit b sits at height lg b; its
// parent is (v - b) | 2b, or v - b when that is out of range; its children are v +- b/2
// (the right one reduced while out of range). Every odd position is a leaf.
struct BinaryTree {
  std::vector<int> parent;                 // -1 for the root
  std::vector<std::vector<int>> children;  // at most two
  std::vector<int> depth;                  // root: 0
  int height = 0;                          // max depth
};
BinaryTree in_order_tree(int q);

// Rank at position v of the second tree of a double binary tree over q ranks: the mirror
// q-1-v for even q, the shift (v+1) mod q for odd q. Either way the leaves of the first tree
// (odd positions) are interior nodes of the second, so every rank is a leaf in at least one
// tree (for odd q rank 0 is the root of the first tree and interior in the second).
int second_tree_rank(int v, int q);

// Rank at position v of tree `tree` (0 or 1) of the double binary tree over q ranks: v in the
// first, second_tree_rank(v, q) in the second.
int double_tree_rank(int tree, int v, int q);

// Tree `tree` (0 or 1) of the double binary tree over q ranks, indexed by rank rather than
// position: in_order_tree(q) with position v at double_tree_rank(tree, v, q). A rank's children
// are in order of their positions; depths and height are the positions'.
BinaryTree double_tree(int q, int tree);

// A tree allreduce over ranks pipelined in chunks, reducing up and broadcasting down at once
// (dbtree's two trees, nccl_tree's channels). In time step t a rank at depth d sends chunk
// t-(H-d) of `range` up to its parent, which reduces it (its children delivered that chunk one
// step earlier), and chunk t-(H+d) down to its children, which copy it; so it receives chunk
// t-(H+d-1) from its parent and chunk t-(H-d-1) from each child. R + 2H - 1 steps for R rounds.
struct PipelinedTree {
  std::vector<int> parent;                 // by rank; -1: the root
  std::vector<std::vector<int>> children;  // by rank, at most 3, in the order they are listed
  std::vector<int> depth;                  // by rank
  int height = 0;
  // By rank, the place its messages are listed at in a step (dbtree: its position in the tree);
  // empty: the rank itself.
  std::vector<int> order;
  Block range;             // the part of the buffer it reduces
  std::size_t rounds = 0;  // chunks of it (empty chunks past the range's end are not sent)
  std::uint16_t channel = 0;

  // Appends rank r's ops of time step t, in the order the tree lists its messages: by sender's
  // place, a sender's message up before its messages down, children in their order.
  void ops(int r, long long t, std::size_t chunk_elems, std::vector<Op>& out) const;
};

}  // namespace colltune::coll::algo
