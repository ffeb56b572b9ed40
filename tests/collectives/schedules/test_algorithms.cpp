// Every registered algorithm, on 1..17 ranks and awkward sizes: the schedule validates
// symbolically and, executed on integer data by the reference interpreter, gives exactly the
// host reference result.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "reference.hpp"

using namespace colltune;
using namespace colltune::coll;
using ::testing::HasSubstr;

namespace {

std::vector<std::size_t> counts_for(int p) {
  const auto up = static_cast<std::size_t>(p);
  return {0, 1, 2, 7, up - 1, up, up + 1, 1000, 65537, std::size_t{1} << 20};
}

// Validates, checks that no empty block is sent, and (for sizes the interpreter handles
// quickly) runs the data.
void check(const Algorithm& a, const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  SCOPED_TRACE(a.id + " p=" + std::to_string(layout.nranks()) + " hosts=" + std::to_string(layout.nhosts()) +
               " count=" + std::to_string(count) + " chunk=" + std::to_string(options.chunk_elems) +
               " inner=" + options.inner);
  const Schedule s = build_schedule(a.id, layout, count, options);
  EXPECT_EQ(s.algorithm, a.id);
  EXPECT_EQ(s.collective, a.collective);
  ASSERT_NO_THROW(validate(s));
  for (const auto& steps : s.ranks) {
    for (const Step& st : steps) {
      ASSERT_FALSE(st.ops.empty());
      for (const Op& op : st.ops) ASSERT_GT(op.block.count, 0U);
    }
  }
  if (count <= 65537) {
    EXPECT_EQ(test::check_data(s, test::run_data(s)), "");
  }
}

bool applicable(const Algorithm& a, const RankLayout& layout, std::size_t count, const AlgoOptions& o) {
  return !a.not_applicable(layout, count, o).has_value();
}

}  // namespace

TEST(Algorithms, EveryAlgorithmEveryRankCountEverySize) {
  int checked = 0;
  for (const Algorithm& a : algorithms()) {
    for (int p = 1; p <= 17; ++p) {
      const RankLayout layout = RankLayout::single_host(p);
      for (std::size_t count : counts_for(p)) {
        if (!applicable(a, layout, count, {})) continue;
        check(a, layout, count, {});
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1200);
}

TEST(Algorithms, SmallChunksReachMultiChunkPaths) {
  for (const Algorithm& a : algorithms()) {
    for (int p : {1, 2, 3, 5, 8, 13, 17}) {
      const RankLayout layout = RankLayout::single_host(p);
      for (std::size_t count : {std::size_t{7}, std::size_t{64}, std::size_t{1000}}) {
        for (std::size_t chunk : {1, 3, 16}) {
          AlgoOptions o;
          o.chunk_elems = chunk;
          if (applicable(a, layout, count, o)) check(a, layout, count, o);
        }
      }
      AlgoOptions big;
      big.chunk_elems = 20000;
      if (applicable(a, layout, 1 << 20, big)) check(a, layout, std::size_t{1} << 20, big);
    }
  }
}

TEST(Algorithms, HierarchicalOnMultiHostLayouts) {
  const std::vector<RankLayout> layouts = {
      RankLayout::uniform(2, 1), RankLayout::uniform(2, 4), RankLayout::uniform(3, 3), RankLayout::uniform(4, 4),
      RankLayout::uniform(5, 3), RankLayout::uniform(1, 6), RankLayout({0, 1, 0, 1, 2, 2}),  // interleaved, uniform
  };
  for (const RankLayout& layout : layouts) {
    for (const char* inner : {"ring", "rhd", "tree", "dbtree"}) {
      for (std::size_t chunk : {0, 5}) {
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{100}, std::size_t{65537}}) {
          AlgoOptions o;
          o.inner = inner;
          o.chunk_elems = chunk;
          if (chunk != 0 && count > 1000) continue;
          check(find_algorithm("hierarchical"), layout, count, o);
          check(find_algorithm("hierarchical_leader"), layout, count, o);
        }
      }
    }
  }
}

TEST(Algorithms, IrregularHostsUseTheLeaderVariant) {
  const RankLayout layout({0, 0, 0, 1, 1, 2, 3, 3, 3, 3});
  const Algorithm& h = find_algorithm("hierarchical");
  const auto reason = h.not_applicable(layout, 100, {});
  ASSERT_TRUE(reason.has_value());
  EXPECT_THAT(*reason, HasSubstr("different numbers of ranks"));
  try {
    build_schedule("hierarchical", layout, 100);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not applicable"));
  }
  for (const char* inner : {"ring", "rhd", "tree", "dbtree"}) {
    AlgoOptions o;
    o.inner = inner;
    for (std::size_t count : {std::size_t{3}, std::size_t{1001}}) check(find_algorithm("hierarchical_leader"), layout, count, o);
  }
  // Every other allreduce ignores hosts and works on any layout.
  for (const char* id : {"ring", "tree", "dbtree", "rhd"}) check(find_algorithm(id), layout, 1001, {});
}

TEST(Registry, UnknownIdListsKnownOnes) {
  try {
    find_algorithm("butterfly");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown algorithm 'butterfly'"));
    EXPECT_THAT(e.what(), HasSubstr("ring, tree, dbtree, rhd, rhd_near, hierarchical"));
  }
}

TEST(Registry, ZeroRanksIsAnError) {
  EXPECT_THROW(build_schedule("ring", RankLayout{}, 10), Error);
  EXPECT_THROW(RankLayout::single_host(0), Error);
}

TEST(Registry, NotApplicableIsAnAnswer) {
  const Algorithm& rs = find_algorithm("reduce_scatter_rh");
  EXPECT_THAT(rs.not_applicable(RankLayout::single_host(6), 10, {}).value_or(""), HasSubstr("power-of-two"));
  EXPECT_FALSE(rs.not_applicable(RankLayout::single_host(8), 10, {}).has_value());
  AlgoOptions o;
  o.inner = "hierarchical";
  EXPECT_THAT(find_algorithm("hierarchical").not_applicable(RankLayout::uniform(2, 2), 10, o).value_or(""),
              HasSubstr("inner algorithm 'hierarchical'"));
  EXPECT_THROW(build_schedule("hierarchical_leader", RankLayout::uniform(2, 2), 10, o), Error);
}

TEST(Registry, IdsAreUniqueAndDescribed) {
  std::set<std::string> ids;
  for (const Algorithm& a : algorithms()) {
    EXPECT_TRUE(ids.insert(a.id).second) << a.id;
    EXPECT_FALSE(a.name.empty());
    EXPECT_FALSE(a.description.empty());
    EXPECT_TRUE(a.schedule && a.not_applicable && a.summation_depth);  // cost is optional: without it the schedule is priced
  }
  for (const char* id : {"ring", "tree", "dbtree", "rhd", "hierarchical", "hierarchical_leader", "reduce_scatter_ring",
                         "allgather_ring"}) {
    EXPECT_TRUE(ids.count(id)) << id;
  }
}

// Which runtimes can run what: NCCL runs an algorithm only under an NCCL name (its tuner CSV
// spelling), Horovod runs NCCL's allreduces plus its hierarchical path, colltune runs all but
// the baselines, which run under their own runtime (ps).
TEST(Registry, RuntimeFactsAgreeWithNcclNames) {
  const std::set<std::string> nccl_spellings{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree",
                                             "pat"};
  for (const Algorithm& a : algorithms()) {
    EXPECT_NE(a.runs_on(Runtime::colltune), a.baseline_only) << a.id;
    EXPECT_EQ(a.runs_on(Runtime::ps), a.id == "ps") << a.id;
    EXPECT_EQ(a.runs_on(Runtime::nccl), !a.nccl_name.empty()) << a.id;
    if (!a.nccl_name.empty()) {
      EXPECT_TRUE(nccl_spellings.count(a.nccl_name)) << a.id << " " << a.nccl_name;
      EXPECT_TRUE(a.runs_on(Runtime::horovod)) << a.id;  // a fused buffer is one ncclAllReduce
    }
  }
  EXPECT_EQ(find_algorithm("ring").nccl_name, "ring");
  EXPECT_EQ(find_algorithm("dbtree").nccl_name, "tree");  // NCCL's tree is a double binary tree
  EXPECT_TRUE(find_algorithm("hierarchical").runs_on(Runtime::horovod));
  EXPECT_FALSE(find_algorithm("hierarchical").runs_on(Runtime::nccl));
  EXPECT_EQ(find_algorithm("hierarchical").placement, Placement::per_host);
  for (const char* id : {"tree", "rhd", "rhd_near", "hierarchical_leader"}) {
    EXPECT_FALSE(find_algorithm(id).runs_on(Runtime::nccl)) << id;
    EXPECT_FALSE(find_algorithm(id).runs_on(Runtime::horovod)) << id;
  }
}

TEST(Algorithms, RingMovesTheTextbookBytes) {
  // 2 (p-1)/p n elements per rank, so 2 (p-1) n in total.
  const Schedule s = build_schedule("ring", RankLayout::single_host(8), 8000);
  EXPECT_EQ(s.total_elements_sent(), 2U * 7U * 8000U);
  const Schedule r = build_schedule("rhd", RankLayout::single_host(8), 8000);
  EXPECT_EQ(r.total_elements_sent(), 2U * 7U * 8000U);
  EXPECT_EQ(r.steps(0).size(), 6U);
}
