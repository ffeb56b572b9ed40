// nccl_tree: 2k channels, each a chain inside every host and NCCL's double binary tree across
// the hosts, on 1/2k of the buffer and on op channel j. The schedule validates and computes
// exactly the reference result on 1, 2 and odd numbers of hosts, uneven counts and chunks; the
// host trees are NCCL's (ncclGetDtree: the btree, its mirror for an even number of hosts, its
// shift for an odd one); a host's children attach to the chain's first two ranks (balanced
// pattern) or its head (simple); the channels share the buffer; uneven hosts and too many
// orders are not applicable; the priced pipeline agrees with the schedule priced whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/pricer.hpp"
#include "reference.hpp"

using namespace colltune;
using namespace colltune::coll;
using ::testing::HasSubstr;

namespace {

AlgoOptions tree_options(std::vector<std::vector<int>> orders, std::size_t chunk = 0, bool simple = false) {
  AlgoOptions o;
  o.channel_orders = std::move(orders);
  o.chunk_elems = chunk;
  o.nccl_simple_tree = simple;
  return o;
}

void check(const RankLayout& l, std::size_t count, const AlgoOptions& o) {
  SCOPED_TRACE("hosts=" + std::to_string(l.nhosts()) + " p=" + std::to_string(l.nranks()) +
               " count=" + std::to_string(count) + " chunk=" + std::to_string(o.chunk_elems) + " channels=" +
               std::to_string(algo::nccl_tree_channels(l, o)) + " simple=" + std::to_string(o.nccl_simple_tree));
  const Schedule s = build_schedule("nccl_tree", l, count, o);
  ASSERT_NO_THROW(validate(s));
  for (const auto& steps : s.ranks)
    for (const Step& st : steps)
      for (const Op& op : st.ops) {
        ASSERT_GT(op.block.count, 0U);
        ASSERT_LT(op.channel, algo::nccl_tree_channels(l, o));
      }
  EXPECT_EQ(test::check_data(s, test::run_data(s)), "");
}

// Per channel, who each rank reduces into (the receiver of its recv_reduce messages).
std::map<int, std::map<int, int>> parents_by_channel(const Schedule& s) {
  std::map<int, std::map<int, int>> parents;
  for (int r = 0; r < s.nranks; ++r)
    for (const Step& st : s.ranks[static_cast<std::size_t>(r)])
      for (const Op& op : st.ops)
        if (op.kind == OpKind::recv_reduce) parents[op.channel][op.peer] = r;
  return parents;
}

}  // namespace

TEST(NcclTree, DefaultChannelsOnUniformHosts) {
  for (auto [h, per] : {std::pair{1, 1}, {1, 5}, {2, 1}, {2, 4}, {3, 3}, {4, 2}, {5, 1}, {6, 2}, {7, 3}, {2, 8}}) {
    const RankLayout l = RankLayout::uniform(h, per);
    EXPECT_EQ(algo::nccl_tree_channels(l, {}), 2 * per);
    for (std::size_t count :
         {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(2 * per) + 1, std::size_t{1000}, std::size_t{65537}})
      for (std::size_t chunk : {std::size_t{0}, std::size_t{7}})
        for (bool simple : {false, true}) check(l, count, tree_options({}, chunk, simple));
  }
}

TEST(NcclTree, GivenChainsOnUniformHosts) {
  const std::vector<std::vector<int>> four{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}};
  for (int hosts : {1, 2, 3, 5})
    for (std::size_t count : {std::size_t{3}, std::size_t{4099}, std::size_t{65536}})
      for (std::size_t chunk : {std::size_t{0}, std::size_t{5}})
        check(RankLayout::uniform(hosts, 4), count, tree_options(four, chunk));
}

// One rank per host: channel 0 is NCCL's btree over the hosts, channel 1 its mirror (an even
// number of hosts) or its shift by one (odd), as drawn in NCCL's src/graph/trees.cc.
TEST(NcclTree, HostTreesAreNcclsDoubleBinaryTree) {
  const auto four = parents_by_channel(build_schedule("nccl_tree", RankLayout::uniform(4, 1), 64));
  EXPECT_EQ(four.at(0), (std::map<int, int>{{1, 2}, {2, 0}, {3, 2}}));  // 0 - 2 - {1, 3}
  EXPECT_EQ(four.at(1), (std::map<int, int>{{0, 1}, {1, 3}, {2, 1}}));  // 3 - 1 - {0, 2}
  const auto three = parents_by_channel(build_schedule("nccl_tree", RankLayout::uniform(3, 1), 64));
  EXPECT_EQ(three.at(0), (std::map<int, int>{{1, 2}, {2, 0}}));  // 0 - 2 - 1
  EXPECT_EQ(three.at(1), (std::map<int, int>{{2, 0}, {0, 1}}));  // 1 - 0 - 2
  // 12 hosts, trees.cc's picture: 0-8, 8-{4,10}, 4-{2,6}, 10-{9,11}, ...; the mirror 11-3, ...
  const auto twelve = parents_by_channel(build_schedule("nccl_tree", RankLayout::uniform(12, 1), 64));
  EXPECT_EQ(twelve.at(0).at(8), 0);
  EXPECT_EQ(twelve.at(0).at(10), 8);
  EXPECT_EQ(twelve.at(0).at(4), 8);
  EXPECT_EQ(twelve.at(0).at(11), 10);
  EXPECT_EQ(twelve.at(1).at(3), 11);
  EXPECT_EQ(twelve.at(1).at(7), 3);
  EXPECT_EQ(twelve.at(1).at(0), 1);
  EXPECT_EQ(twelve.at(0).size(), 11u);
  EXPECT_EQ(twelve.at(1).size(), 11u);
}

// Hosts of 3, chain 0-1-2: inside a host every rank reduces into the previous one; across
// hosts a host's head (local 0) reduces into its parent host's local 1 when it is the first
// child (balanced pattern) and into the head when it is the second, or always into the head
// (simple pattern).
TEST(NcclTree, ChainsAndHostLinksFollowThePattern) {
  const RankLayout l = RankLayout::uniform(4, 3);
  for (bool simple : {false, true}) {
    const auto parents = parents_by_channel(build_schedule("nccl_tree", l, 600, tree_options({{0, 1, 2}}, 0, simple)));
    const auto& t0 = parents.at(0);
    for (int h = 0; h < 4; ++h) {
      EXPECT_EQ(t0.at(3 * h + 2), 3 * h + 1);
      EXPECT_EQ(t0.at(3 * h + 1), 3 * h);
    }
    EXPECT_EQ(t0.at(3 * 2), 0);                   // host 2 is host 0's only (second) child
    EXPECT_EQ(t0.at(3 * 1), simple ? 6 : 6 + 1);  // host 1: host 2's first child
    EXPECT_EQ(t0.at(3 * 3), 6);                   // host 3: host 2's second child
    EXPECT_EQ(t0.count(0), 0u);                   // the root
  }
}

TEST(NcclTree, TheChannelsShareTheBuffer) {
  // Two chains on 2 hosts of 4: four channels, channel j moves only segment j of 4.
  const RankLayout l = RankLayout::uniform(2, 4);
  const Schedule s = build_schedule("nccl_tree", l, 4000, tree_options({{0, 1, 2, 3}, {3, 2, 1, 0}}, 100));
  std::set<int> seen;
  for (const auto& steps : s.ranks)
    for (const Step& st : steps)
      for (const Op& op : st.ops) {
        EXPECT_GE(op.block.offset, op.channel * 1000u);
        EXPECT_LE(op.block.end(), (op.channel + 1) * 1000u);
        seen.insert(op.channel);
      }
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3}));
}

TEST(NcclTree, NotApplicableToUnevenHostsOrBadChains) {
  const Algorithm& a = find_algorithm("nccl_tree");
  EXPECT_THAT(a.not_applicable(RankLayout({0, 0, 1}), 10, {}).value_or(""),
              HasSubstr("same number of ranks on every host"));
  const RankLayout l = RankLayout::uniform(2, 3);
  EXPECT_THAT(a.not_applicable(l, 10, tree_options({{0, 1}})).value_or(""),
              HasSubstr("channel_orders[0] lists 2 local ranks, a host has 3"));
  EXPECT_THAT(a.not_applicable(l, 10, tree_options({{1, 1, 2}})).value_or(""), HasSubstr("local rank 1 twice"));
  // Each chain makes two channels: at most 32 chains for NCCL's 64 channels.
  EXPECT_THAT(a.not_applicable(l, 10, tree_options(std::vector<std::vector<int>>(33, {0, 1, 2}))).value_or(""),
              HasSubstr("33 channels, at most 32"));
  EXPECT_FALSE(a.not_applicable(l, 10, tree_options(std::vector<std::vector<int>>(32, {0, 1, 2}))).has_value());
  EXPECT_THROW(build_schedule("nccl_tree", l, 10, tree_options({{0, 1}})), colltune::Error);
  // Like nccl_ring: colltune's schedule of NCCL's algorithm; NCCL's own "tree" is priced under dbtree.
  EXPECT_EQ(a.nccl_name, "");
  EXPECT_FALSE(a.runs_on(Runtime::nccl));
  EXPECT_TRUE(a.nccl_tree_channels);
  EXPECT_FALSE(a.nccl_ring_channels);
}

// The chain adds L-1 levels, every host level one or two (balanced: a first child enters at the
// second rank of its parent's chain).
TEST(NcclTree, SummationDepthIsTheTreeHeight) {
  const Algorithm& a = find_algorithm("nccl_tree");
  EXPECT_EQ(a.summation_depth(RankLayout::uniform(1, 1), {}), 0);
  EXPECT_EQ(a.summation_depth(RankLayout::uniform(1, 8), {}), 7);
  EXPECT_EQ(a.summation_depth(RankLayout::uniform(4, 1), {}), 2);
  // 4 hosts of 3 (the test above): host 1's chain (2 levels), to local 1 of host 2, to host 2's
  // head, to host 0's head; without the balanced pattern's extra chain level one fewer.
  EXPECT_EQ(a.summation_depth(RankLayout::uniform(4, 3), tree_options({{0, 1, 2}})), 2 + 1 + 1 + 1);
  EXPECT_EQ(a.summation_depth(RankLayout::uniform(4, 3), tree_options({{0, 1, 2}}, 0, true)), 2 + 1 + 1);
}

// The depth is computed without the trees; it must be the height of the trees the schedule
// builds, read from its messages (who reduces into whom, per channel). Host counts odd and even
// (the second tree shifted or mirrored), chains of every length, both patterns, and two chain
// orders (the height does not depend on the order).
TEST(NcclTree, SummationDepthIsTheBuiltTreesHeight) {
  const Algorithm& a = find_algorithm("nccl_tree");
  for (int hosts : {1, 2, 3, 4, 5, 6, 7, 9, 12, 16, 17, 31, 64})
    for (int per_host : {1, 2, 3, 8})
      for (bool simple : {false, true})
        for (bool reversed : {false, true}) {
          SCOPED_TRACE("hosts=" + std::to_string(hosts) + " per_host=" + std::to_string(per_host) +
                       " simple=" + std::to_string(simple) + " reversed=" + std::to_string(reversed));
          const RankLayout l = RankLayout::uniform(hosts, per_host);
          if (l.nranks() < 2) continue;
          std::vector<int> order(static_cast<std::size_t>(per_host));
          for (int i = 0; i < per_host; ++i) order[static_cast<std::size_t>(i)] = reversed ? per_host - 1 - i : i;
          const AlgoOptions o = tree_options({order, std::vector<int>(order.rbegin(), order.rend())}, 0, simple);
          int height = 0;
          for (const auto& [channel, parent] : parents_by_channel(build_schedule("nccl_tree", l, 4096, o)))
            for (const auto& [rank, up] : parent) {
              int depth = 1;
              for (auto it = parent.find(up); it != parent.end(); it = parent.find(it->second)) ++depth;
              height = std::max(height, depth);
            }
          EXPECT_EQ(a.summation_depth(l, o), height);
        }
}

// The cost model prices nccl_tree's long pipelines from short ones (pipeline_pieces = 2k): the
// same as the whole schedule priced, on one and several hosts.
TEST(NcclTree, PricedPipelineMatchesTheWholeSchedule) {
  LevelCosts c;
  c.alpha_intra_us = 2.0;
  c.beta_intra_us_per_byte = 1e-4;
  c.alpha_inter_us = 7.0;
  c.beta_inter_us_per_byte = 4e-4;
  c.gamma_us_per_byte = 3e-5;
  const Algorithm& a = find_algorithm("nccl_tree");
  int shortcuts = 0;
  for (auto [h, per] : {std::pair{1, 4}, {3, 1}, {2, 4}, {5, 2}})
    for (bool separate : {false, true}) {
      const RankLayout l = RankLayout::uniform(h, per);
      LevelCosts costs = c;
      costs.separate_level_ports = separate && h > 1;
      costs.beta_host_us_per_byte = h > 1 ? c.beta_inter_us_per_byte / 2 : 0.0;
      AlgoOptions o;
      o.chunk_elems = 16;
      const std::size_t count = a.pipeline_pieces(l, o) * o.chunk_elems * 120 + 5;
      SCOPED_TRACE("hosts " + std::to_string(h) + " x " + std::to_string(per) + " separate " +
                   std::to_string(separate));
      const double whole = sim::price_schedule(StoredSteps(build_schedule("nccl_tree", l, count, o)), l, 4, costs);
      bool shortcut = false;
      EXPECT_NEAR(sim::price_pipeline(a, l, count, 4, o, costs, &shortcut), whole, 1e-9 * whole);
      EXPECT_NEAR(sim::hint_or_price(a, l, count * 4, 4, o, costs), whole, 1e-9 * whole);
      shortcuts += shortcut ? 1 : 0;
    }
  EXPECT_GT(shortcuts, 0);
}
