#pragma once
// Tree shapes, as positions 0..q-1 (tests/collectives/schedules/test_index_math.cpp checks them).
#include <vector>

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

}  // namespace colltune::coll::algo
