#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"

using namespace colltune::coll;
using namespace colltune::coll::algo;

TEST(IndexMath, SegmentsAreBalancedAndTile) {
  for (std::size_t parts = 1; parts <= 9; ++parts) {
    for (std::size_t count : {0UL, 1UL, 5UL, 9UL, 10UL, 1001UL}) {
      std::size_t next = 0;
      for (std::size_t i = 0; i < parts; ++i) {
        const Block b = segment_of(i, parts, count);
        EXPECT_EQ(b.offset, next);
        EXPECT_LE(b.count, segment_of(0, parts, count).count);
        EXPECT_GE(b.count + 1, segment_of(0, parts, count).count);
        next = b.end();
      }
      EXPECT_EQ(next, count);
      EXPECT_EQ(segments_span(0, parts, parts, count), (Block{0, count}));
    }
  }
  EXPECT_EQ(segment_of(2, 4, 10), (Block{6, 2}));
  EXPECT_EQ(segments_span(1, 3, 4, 10), (Block{3, 5}));
}

TEST(IndexMath, RingPeerWraps) {
  EXPECT_EQ(ring_peer(0, -1, 5), 4);
  EXPECT_EQ(ring_peer(4, 1, 5), 0);
  EXPECT_EQ(ring_peer(2, -7, 5), 0);
}

TEST(IndexMath, ChunksCoverBlock) {
  const Block b{10, 23};
  EXPECT_EQ(chunk_count(23, 5), 5U);
  EXPECT_EQ(chunk_count(23, 0), 1U);
  EXPECT_EQ(chunk_count(0, 5), 0U);
  EXPECT_EQ(chunk_of(b, 0, 5), (Block{10, 5}));
  EXPECT_EQ(chunk_of(b, 4, 5), (Block{30, 3}));
  EXPECT_EQ(chunk_of(b, 5, 5).count, 0U);
  EXPECT_EQ(chunk_of(b, 0, 0), b);
}

// A chunk near 2^64 (a negative --chunk wrapped by an unsigned parser once) is one chunk, not
// zero: (n + chunk - 1) used to wrap around.
TEST(IndexMath, HugeChunksDoNotWrap) {
  const std::size_t huge = ~std::size_t{0};
  const Block b{10, 23};
  EXPECT_EQ(chunk_count(23, huge), 1U);
  EXPECT_EQ(chunk_count(huge, huge), 1U);
  EXPECT_EQ(chunk_count(huge, huge - 1), 2U);
  EXPECT_EQ(chunk_of(b, 0, huge), b);
  EXPECT_EQ(chunk_of(b, 1, huge).count, 0U);
  EXPECT_EQ(chunk_of(b, 3, huge / 2).count, 0U);  // 3 * (2^63 - 1) would wrap to a small start
}

TEST(IndexMath, PowersOfTwo) {
  EXPECT_EQ(floor_pow2(1), 1);
  EXPECT_EQ(floor_pow2(13), 8);
  EXPECT_EQ(ceil_log2(1), 0);
  EXPECT_EQ(ceil_log2(9), 4);
  EXPECT_EQ(ceil_log2(8), 3);
  EXPECT_EQ(lowest_bit(12), 2);
  EXPECT_TRUE(is_pow2(16));
  EXPECT_FALSE(is_pow2(12));
}

TEST(Trees, BinomialParentsAndChildrenAgree) {
  for (int q = 1; q <= 17; ++q) {
    int edges = 0;
    for (int v = 0; v < q; ++v) {
      for (int c : binomial_children(v, q)) {
        EXPECT_EQ(binomial_parent(c), v);
        ++edges;
      }
    }
    EXPECT_EQ(edges, q - 1);
  }
  EXPECT_EQ(binomial_children(0, 13), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(binomial_children(4, 13), (std::vector<int>{5, 6}));
  EXPECT_EQ(binomial_children(12, 13), (std::vector<int>{}));
}

TEST(Trees, InOrderTreeMatchesTheFourteenRankPicture) {
  // 0 - 8; 8 -> 4, 12; 4 -> 2, 6; 12 -> 10, 13; 2 -> 1, 3; ...
  const BinaryTree t = in_order_tree(14);
  EXPECT_EQ(t.parent[8], 0);
  EXPECT_EQ(t.parent[4], 8);
  EXPECT_EQ(t.parent[12], 8);
  EXPECT_EQ(t.parent[13], 12);
  EXPECT_EQ(t.parent[10], 12);
  EXPECT_EQ(t.parent[1], 2);
  EXPECT_EQ(t.children[0], (std::vector<int>{8}));
  EXPECT_EQ(t.height, 4);
  EXPECT_EQ(t.depth[1], 4);
}

TEST(Trees, DoubleTreeLeavesAndInteriors) {
  for (int q = 2; q <= 33; ++q) {
    const BinaryTree t = in_order_tree(q);
    std::set<int> interior1, interior2;
    for (int v = 0; v < q; ++v) {
      EXPECT_LE(t.children[static_cast<std::size_t>(v)].size(), 2U);
      if (!t.children[static_cast<std::size_t>(v)].empty()) {
        interior1.insert(v);
        interior2.insert(second_tree_rank(v, q));
      }
    }
    for (int r = 0; r < q; ++r) {
      const bool both = interior1.count(r) && interior2.count(r);
      // Every rank is a leaf in at least one tree, except rank 0 (root of the first) for odd q.
      EXPECT_TRUE(!both || (q % 2 == 1 && r == 0)) << "q=" << q << " rank " << r;
    }
  }
}

// double_tree is in_order_tree with positions renamed to ranks: the first tree is it unchanged;
// in either, a rank's parent and children are the ranks of its position's parent and children,
// in the positions' order, at the position's depth.
TEST(Trees, DoubleTreeByRankIsTheInOrderTreeRenamed) {
  for (int q = 1; q <= 33; ++q) {
    const BinaryTree pos = in_order_tree(q);
    for (int tree : {0, 1}) {
      const BinaryTree t = double_tree(q, tree);
      EXPECT_EQ(t.height, pos.height) << "q=" << q;
      for (int v = 0; v < q; ++v) {
        const auto r = static_cast<std::size_t>(double_tree_rank(tree, v, q));
        const auto sv = static_cast<std::size_t>(v);
        EXPECT_EQ(t.depth[r], pos.depth[sv]) << "q=" << q << " tree " << tree << " v " << v;
        const int up = pos.parent[sv];
        EXPECT_EQ(t.parent[r], up < 0 ? -1 : double_tree_rank(tree, up, q)) << "q=" << q << " tree " << tree;
        std::vector<int> positions = pos.children[sv];
        std::sort(positions.begin(), positions.end());
        std::vector<int> children;
        for (int c : positions) children.push_back(double_tree_rank(tree, c, q));
        EXPECT_EQ(t.children[r], children) << "q=" << q << " tree " << tree << " v " << v;
      }
    }
    EXPECT_EQ(double_tree(q, 0).parent, pos.parent) << "q=" << q;
    EXPECT_EQ(double_tree(q, 0).depth, pos.depth) << "q=" << q;
  }
}
