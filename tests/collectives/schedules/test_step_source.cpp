// Schedules read step by step: a stored schedule's view, generated schedules (the ring family,
// the pipelined trees, recursive halving-doubling) against what build() returns, and the
// rotation and XOR symmetries a generator declares, checked by brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

void expect_same_schedule(const Schedule& a, const Schedule& b) {
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.collective, b.collective);
  EXPECT_EQ(a.nranks, b.nranks);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.owned, b.owned);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    ASSERT_EQ(a.ranks[r].size(), b.ranks[r].size()) << "rank " << r;
    for (std::size_t s = 0; s < a.ranks[r].size(); ++s) EXPECT_EQ(a.ranks[r][s].ops, b.ranks[r][s].ops);
  }
}

// Rank r+d's step s must be rank r's with peers rotated by d and the same kinds and counts.
void expect_rotation_invariant(const StepSource& src, int d) {
  const int p = src.header().nranks;
  std::vector<Op> sa;
  std::vector<Op> sb;
  for (int r = 0; r < p; ++r) {
    const int img = (r + d) % p;
    ASSERT_EQ(src.num_steps(r), src.num_steps(img));
    for (std::size_t s = 0; s < src.num_steps(r); ++s) {
      const std::span<const Op> a = src.ops(r, s, sa);
      const std::span<const Op> b = src.ops(img, s, sb);
      ASSERT_EQ(a.size(), b.size()) << "rank " << r << " step " << s;
      for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].kind, b[i].kind);
        EXPECT_EQ((a[i].peer + d) % p, b[i].peer);
        EXPECT_EQ(a[i].block.count, b[i].block.count);
        EXPECT_EQ(a[i].channel, b[i].channel);
      }
    }
  }
}

// For stored algorithms this checks the StoredSteps view and materialize(); for generated ones
// build() is materialize() of the generator by construction, and what matters is the declared
// rotation symmetry, checked by brute force.
TEST(StepSource, OpenedScheduleIsTheBuiltOne) {
  for (const Algorithm& a : algorithms()) {
    for (int p = 1; p <= 17; ++p) {
      const RankLayout layout = p % 4 == 0 ? RankLayout::uniform(p / 4, 4) : RankLayout::uniform(p, 1);
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{97}, static_cast<std::size_t>(p) * 6}) {
        for (std::size_t chunk : {std::size_t{0}, std::size_t{2}}) {
          AlgoOptions o;
          o.chunk_elems = chunk;
          if (a.not_applicable(layout, count, o)) continue;
          SCOPED_TRACE(a.id + " p=" + std::to_string(p) + " count=" + std::to_string(count));
          const auto source = open_schedule(a.id, layout, count, o);
          expect_same_schedule(materialize(*source), build_schedule(a.id, layout, count, o));
          if (const int d = source->rotation_period(); d > 0) expect_rotation_invariant(*source, d);
        }
      }
    }
  }
}

TEST(StepSource, RingFamilyIsGeneratedAndSymmetricWhenSegmentsAreEqual) {
  for (const char* id : {"ring", "reduce_scatter_ring", "allgather_ring"}) {
    EXPECT_EQ(dynamic_cast<const StoredSteps*>(open_schedule(id, RankLayout::uniform(8, 1), 40).get()), nullptr) << id;
    EXPECT_EQ(open_schedule(id, RankLayout::uniform(8, 1), 8 * 5)->rotation_period(), 1) << id;
    EXPECT_EQ(open_schedule(id, RankLayout::uniform(8, 1), 8 * 5 + 3)->rotation_period(), 0) << id;
  }
  for (const char* id : {"dbtree", "nccl_tree"})  // the pipelined trees are generated too
    EXPECT_EQ(dynamic_cast<const StoredSteps*>(open_schedule(id, RankLayout::uniform(2, 4), 40).get()), nullptr) << id;
  EXPECT_NE(dynamic_cast<const StoredSteps*>(open_schedule("tree", RankLayout::uniform(8, 1), 40).get()), nullptr);
}

// Rank r xor m's step s must hold rank r's ops with peers xor m and the same kinds, counts and
// channels, for every multiple m of d below p: as a set (a pair's lower rank lists its send
// first, the higher its receive).
void expect_xor_invariant(const StepSource& src, int d) {
  const int p = src.header().nranks;
  std::vector<Op> sa;
  std::vector<Op> sb;
  const auto sorted = [](std::vector<Op> ops) {
    std::sort(ops.begin(), ops.end(), [](const Op& x, const Op& y) {
      return std::tie(x.peer, x.kind, x.block.count, x.channel) < std::tie(y.peer, y.kind, y.block.count, y.channel);
    });
    return ops;
  };
  for (int m = d; m < p; m += d)
    for (int r = 0; r < p; ++r) {
      const int img = r ^ m;
      ASSERT_EQ(src.num_steps(r), src.num_steps(img));
      for (std::size_t s = 0; s < src.num_steps(r); ++s) {
        const std::span<const Op> ra = src.ops(r, s, sa);
        std::vector<Op> a(ra.begin(), ra.end());
        for (Op& op : a) op.peer ^= m;
        const std::span<const Op> rb = src.ops(img, s, sb);
        a = sorted(std::move(a));
        const std::vector<Op> b = sorted(std::vector<Op>(rb.begin(), rb.end()));
        ASSERT_EQ(a.size(), b.size()) << "rank " << r << " step " << s << " xor " << m;
        for (std::size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i].kind, b[i].kind) << "rank " << r << " step " << s << " xor " << m;
          EXPECT_EQ(a[i].peer, b[i].peer);
          EXPECT_EQ(a[i].block.count, b[i].block.count);
          EXPECT_EQ(a[i].channel, b[i].channel);
        }
      }
    }
}

// Recursive halving-doubling and its halves are generated (460,000 stored steps on 16,384
// ranks); rhd and rhd_near declare XOR period 1 where the ranks are a power of two and the
// segments equal, checked by brute force, and none elsewhere.
TEST(StepSource, RecursiveHalvingDoublingIsGeneratedWithItsXorSymmetry) {
  for (const char* id : {"rhd", "rhd_near", "reduce_scatter_rh", "allgather_rd"})
    EXPECT_EQ(dynamic_cast<const StoredSteps*>(open_schedule(id, RankLayout::uniform(4, 4), 64).get()), nullptr) << id;
  for (const char* id : {"rhd", "rhd_near"}) {
    for (int p : {2, 8, 32, 64}) {
      const auto even = open_schedule(id, RankLayout::uniform(p / 2, 2), static_cast<std::size_t>(p) * 5);
      ASSERT_EQ(even->xor_period(), 1) << id << " p=" << p;
      expect_xor_invariant(*even, 1);
    }
    EXPECT_EQ(open_schedule(id, RankLayout::uniform(8, 2), 16 * 5 + 3)->xor_period(), 0) << id;
    EXPECT_EQ(open_schedule(id, RankLayout::uniform(3, 4), 12 * 5)->xor_period(), 0) << id;
  }
}

// Whether rank p-1-r's steps are rank r's read from the other end: per peer and direction the
// same kinds and counts, peers as p-1-q, in reverse order (StepSource::mirrors_ranks).
bool mirrored_in_reverse(const StepSource& src) {
  const int p = src.header().nranks;
  using PerPair = std::vector<std::vector<std::pair<OpKind, std::size_t>>>;  // by peer * 2 + sends
  std::vector<Op> sa;
  std::vector<Op> sb;
  for (int r = 0; r < p; ++r) {
    const int m = p - 1 - r;
    if (src.num_steps(r) != src.num_steps(m)) return false;
    for (std::size_t s = 0; s < src.num_steps(r); ++s) {
      PerPair mine(2 * static_cast<std::size_t>(p));
      PerPair theirs(2 * static_cast<std::size_t>(p));
      const auto slot = [](int peer, const Op& op) {
        return 2 * static_cast<std::size_t>(peer) + (op.kind == OpKind::send ? 1 : 0);
      };
      for (const Op& op : src.ops(r, s, sa)) mine[slot(op.peer, op)].emplace_back(op.kind, op.block.count);
      for (const Op& op : src.ops(m, s, sb)) theirs[slot(p - 1 - op.peer, op)].emplace_back(op.kind, op.block.count);
      for (auto& ops : theirs) std::reverse(ops.begin(), ops.end());
      if (mine != theirs) return false;
    }
  }
  return true;
}

// dbtree's second tree is its first read from the other end: it declares the mirror the pricer
// halves its runs on where the ranks and the elements are even (the halves' chunks alike, short
// last chunks included), checked by brute force, and not elsewhere; where the halves differ the
// mirror fails.
TEST(StepSource, DbtreeDeclaresItsMirrorWhereItHolds) {
  int declared = 0;
  for (int p = 2; p <= 34; ++p) {
    for (std::size_t count :
         {std::size_t{0}, std::size_t{2}, std::size_t{7}, std::size_t{40}, std::size_t{1001}, std::size_t{1002}}) {
      for (std::size_t chunk : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{64}}) {
        AlgoOptions o;
        o.chunk_elems = chunk;
        const auto src = open_schedule("dbtree", RankLayout::single_host(p), count, o);
        SCOPED_TRACE("p=" + std::to_string(p) + " count=" + std::to_string(count) + " chunk=" + std::to_string(chunk));
        EXPECT_EQ(src->mirrors_ranks(), p % 2 == 0 && count % 2 == 0);
        if (src->mirrors_ranks()) {
          EXPECT_TRUE(mirrored_in_reverse(*src));
          ++declared;
        }
      }
    }
  }
  EXPECT_EQ(declared, 17 * 4 * 4);
  AlgoOptions o;
  o.chunk_elems = 3;
  EXPECT_FALSE(mirrored_in_reverse(*open_schedule("dbtree", RankLayout::single_host(8), 41, o)));
  EXPECT_FALSE(open_schedule("ring", RankLayout::single_host(8), 40)->mirrors_ranks());
}

// Several rings (NCCL's channels, one per local rank without NCCL's orders) repeat per host:
// the rotation is one host's ranks, checked by brute force, and none with uneven segments.
TEST(StepSource, NcclChannelsDeclareOneHostsRotation) {
  const auto even = open_schedule("nccl_ring", RankLayout::uniform(4, 8), 32 * 8 * 5);
  EXPECT_EQ(even->rotation_period(), 8);
  expect_rotation_invariant(*even, 8);
  EXPECT_EQ(open_schedule("nccl_ring", RankLayout::uniform(4, 8), 32 * 8 * 5 + 3)->rotation_period(), 0);
}

TEST(StepSource, LargeRingIsNotMaterialised) {
  // 4096 ranks x 8190 steps: only the generator exists; any step can be read at once.
  const auto ring = open_schedule("ring", RankLayout::uniform(512, 8), 4096 * 256);
  EXPECT_EQ(ring->num_steps(4095), 2u * 4095u);
  std::vector<Op> scratch;
  const std::span<const Op> ops = ring->ops(4095, 8189, scratch);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].peer, 0);
  EXPECT_EQ(ops[1].peer, 4094);
  EXPECT_EQ(ops[1].kind, OpKind::recv_copy);
}

TEST(StepSource, StoredViewReadsTheSchedule) {
  const Schedule s = build_schedule("dbtree", RankLayout::uniform(6, 1), 60);
  const StoredSteps view(s);
  EXPECT_EQ(view.header().algorithm, "dbtree");
  std::vector<Op> scratch;
  for (int r = 0; r < 6; ++r) {
    ASSERT_EQ(view.num_steps(r), s.ranks[static_cast<std::size_t>(r)].size());
    for (std::size_t i = 0; i < view.num_steps(r); ++i) {
      const std::span<const Op> ops = view.ops(r, i, scratch);
      EXPECT_EQ(std::vector<Op>(ops.begin(), ops.end()), s.ranks[static_cast<std::size_t>(r)][i].ops);
    }
  }
  EXPECT_TRUE(scratch.empty());
  EXPECT_EQ(view.rotation_period(), 0);
}

TEST(StepSource, OpenRejectsWhatBuildRejects) {
  EXPECT_THROW(open_schedule("nope", RankLayout::uniform(4, 1), 10), Error);
  AlgoOptions bad_inner;
  bad_inner.inner = "nope";
  EXPECT_THROW(open_schedule("hierarchical", RankLayout::uniform(2, 2), 10, bad_inner), Error);
  EXPECT_THROW(open_schedule("reduce_scatter_rh", RankLayout::uniform(6, 1), 10), Error);
}

}  // namespace
}  // namespace colltune::coll
