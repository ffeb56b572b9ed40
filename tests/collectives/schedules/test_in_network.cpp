// nccl_nvls_tree (algorithms/nccl_nvls_tree.cpp) and nccl_collnet (algorithms/nccl_collnet.cpp):
// H hosts of L GPUs plus switch helpers (every host's NVSwitch, or the network's SHARP switch).
// Validated symbolically and run on integer data by the reference interpreter, bit for bit; their
// bytes as the files state; refused on layouts without the switches where they must be.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "common/switch_layouts.hpp"
#include "in_switch_util.hpp"
#include "reference.hpp"

using namespace colltune;
using namespace colltune::coll;
using ::testing::HasSubstr;

using test::chunked;
using test::collnet_layout;
using test::nvls_tree_layout;
using test::received_by;

namespace {

// Elements rank `rank` sends to (or receives from) ranks on other hosts.
std::size_t crossing(const Schedule& s, const RankLayout& layout, int rank, bool send) {
  std::size_t e = 0;
  for (const Step& st : s.steps(rank))
    for (const Op& op : st.ops)
      if ((op.kind == OpKind::send) == send && layout.host_of(op.peer) != layout.host_of(rank)) e += op.block.count;
  return e;
}

std::size_t host_crossing(const Schedule& s, const RankLayout& layout, int host, int gpus, bool send) {
  std::size_t e = 0;
  for (int g = 0; g < gpus; ++g) e += crossing(s, layout, host * gpus + g, send);
  return e;
}

void expect_exact(const std::string& algo, const RankLayout& layout, int helpers) {
  for (std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{17}, std::size_t{1001}, std::size_t{40009}}) {
    for (std::size_t chunk : {std::size_t{0}, std::size_t{3}, std::size_t{100}}) {
      if (chunk == 3 && count > 1001) continue;
      SCOPED_TRACE(algo + " ranks=" + std::to_string(layout.nranks()) + " count=" + std::to_string(count) +
                   " chunk=" + std::to_string(chunk));
      const Schedule s = build_schedule(algo, layout, count, chunked(chunk));
      ASSERT_NO_THROW(validate(s));
      EXPECT_EQ(s.helpers, helpers);
      EXPECT_EQ(test::check_data(s, test::run_data(s)), "");
    }
  }
}

}  // namespace

TEST(NcclNvlsTree, ExactOnOneToFiveHostsOfOneToFourGpus) {
  for (int hosts = 1; hosts <= 5; ++hosts)
    for (int gpus : {1, 2, 3, 4}) expect_exact("nccl_nvls_tree", nvls_tree_layout(hosts, gpus), hosts);
}

TEST(NcclNvlsTree, HostsMoveAboutTwiceTheBufferAcrossAndTheSwitchSumsInside) {
  const int hosts = 4, gpus = 8;
  const std::size_t n = 160000;
  const RankLayout layout = nvls_tree_layout(hosts, gpus);
  const Schedule s = build_schedule("nccl_nvls_tree", layout, n, chunked(1000));
  for (int h = 0; h < hosts; ++h) {
    // A double binary tree: a host sends its partial up in one tree and the sum down to its
    // children in the other, about 2n out and 2n in over its NICs (never more than 3n).
    const std::size_t out = host_crossing(s, layout, h, gpus, true);
    const std::size_t in = host_crossing(s, layout, h, gpus, false);
    EXPECT_GE(out, n) << h;
    EXPECT_LE(out, 3 * n) << h;
    EXPECT_GE(in, n) << h;
    EXPECT_LE(in, 3 * n) << h;
    // The switch takes in every GPU's buffer and the final shards from the heads: n(L+1).
    const int sw = hosts * gpus + h;
    EXPECT_EQ(received_by(s, sw), n * (gpus + 1)) << h;
  }
  // Every GPU of a host crosses hosts: the heads share the host's NICs.
  for (int g = 0; g < gpus; ++g) EXPECT_GT(crossing(s, layout, g, true), 0U) << g;
}

TEST(NcclNvlsTree, NeedsTheSwitchesAsTheLastRanksAndFacts) {
  const Algorithm& a = find_algorithm("nccl_nvls_tree");
  EXPECT_FALSE(a.not_applicable(nvls_tree_layout(4, 8), 100, {}).has_value());
  // No switch ranks: the hosts' last ranks are GPUs.
  EXPECT_THAT(a.not_applicable(RankLayout::uniform(4, 8), 100, {}).value_or(""), HasSubstr("is not its NVSwitch"));
  // The layout decides, with or without data; without switch ranks there is no depth either.
  EXPECT_THAT(a.not_applicable(RankLayout::uniform(4, 8), 0, {}).value_or(""), HasSubstr("is not its NVSwitch"));
  EXPECT_EQ(a.summation_depth(RankLayout::uniform(4, 8), {}), 0);
  EXPECT_THAT([&] { build_schedule("nccl_nvls_tree", RankLayout::uniform(2, 4), 10); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not applicable")));
  EXPECT_TRUE(a.in_switch);
  EXPECT_FALSE(a.in_network_switch);
  EXPECT_EQ(a.summation_depth(nvls_tree_layout(1, 8), {}), 1);
  EXPECT_EQ(a.summation_depth(nvls_tree_layout(4, 8), {}), 1 + 2);  // in_order_tree over 4 hosts: height 2
  EXPECT_FALSE(a.runs_on(Runtime::nccl));
}

TEST(NcclCollnet, ExactOnOneToFiveHostsOfOneToFourGpus) {
  for (int hosts = 1; hosts <= 5; ++hosts)
    for (int gpus : {1, 2, 3, 4}) expect_exact("nccl_collnet", collnet_layout(hosts, gpus), 1);
}

TEST(NcclCollnet, AHostMovesTheBufferOnceEachWayAcross) {
  const int hosts = 4, gpus = 8;
  const std::size_t n = 160000;
  const RankLayout layout = collnet_layout(hosts, gpus);
  const Schedule s = build_schedule("nccl_collnet", layout, n, chunked(1000));
  for (int h = 0; h < hosts; ++h) {
    EXPECT_EQ(host_crossing(s, layout, h, gpus, true), n) << h;
    EXPECT_EQ(host_crossing(s, layout, h, gpus, false), n) << h;
  }
  // nccl_tree on the same hosts: its busiest host sends about 2n (a vertex with two children in
  // one tree and a parent in both), the NICs' bottleneck; the roots' hosts send less.
  const RankLayout plain = RankLayout::uniform(hosts, gpus);
  const Schedule tree = build_schedule("nccl_tree", plain, n, chunked(1000));
  std::size_t busiest = 0;
  for (int h = 0; h < hosts; ++h) busiest = std::max(busiest, host_crossing(tree, plain, h, gpus, true));
  EXPECT_GT(busiest, 3 * n / 2);
}

TEST(NcclCollnet, NeedsTheSwitchAloneAsTheLastRankAndFacts) {
  const Algorithm& a = find_algorithm("nccl_collnet");
  EXPECT_FALSE(a.not_applicable(collnet_layout(4, 8), 100, {}).has_value());
  EXPECT_THAT(a.not_applicable(RankLayout::uniform(4, 8), 100, {}).value_or(""), HasSubstr("SHARP switch"));
  EXPECT_THAT(a.not_applicable(RankLayout::uniform(4, 8), 0, {}).value_or(""), HasSubstr("SHARP switch"));
  EXPECT_EQ(a.summation_depth(RankLayout::uniform(4, 8), {}), 0);
  EXPECT_TRUE(a.in_switch);
  EXPECT_TRUE(a.in_network_switch);
  EXPECT_EQ(a.summation_depth(collnet_layout(4, 8), {}), 8);
  EXPECT_FALSE(a.runs_on(Runtime::nccl));
}
