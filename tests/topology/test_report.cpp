// The `topo show` summary, the slowest-route scan and the DOT export.
#include "colltune/topology/report.hpp"

#include <cstddef>
#include <limits>

#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

using ::testing::HasSubstr;

TEST(TopologyReport, SummaryOfTwoDgxH100) {
  const std::string s = summary_text(load_topology("dgx-h100:nodes=2"));
  EXPECT_THAT(s, HasSubstr("topology: dgx-h100:nodes=2\n"));
  EXPECT_THAT(s, HasSubstr("hosts: 2\n"));
  // Per host: 8 GPUs, 2 CPUs, 8 NICs, 1 NVSwitch, 8 PCIe switches; plus one leaf.
  EXPECT_THAT(s, HasSubstr("devices: 55 (gpu 16, cpu 4, nic 16, nvswitch 2, pcie_switch 16, net_switch 1)"));
  EXPECT_THAT(s, ::testing::ContainsRegex("nvlink +450 GB/s +0.35 us  x 32"));
  EXPECT_THAT(s, ::testing::ContainsRegex("net +50 GB/s +1 us  x 32"));
  EXPECT_THAT(s, HasSubstr("ranks: 16 on 2 host(s), 8 per host\n  node0: ranks 0-7\n  node1: ranks 8-15\n"));
  EXPECT_THAT(s, HasSubstr("slowest rank-to-rank route: rank 0 (node0/gpu0) -> rank 8 (node1/gpu0): 50 GB/s bottleneck, "
                           "4 us, 6 hop(s)\n  node0/gpu0 -> node0/pcie0  pcie  63.0154 GB/s  0.5 us\n"));
}

TEST(TopologyReport, SlowestRouteIsTheNarrowestThenTheLatest) {
  const RankPairRoute slow = slowest_route(load_topology("dgx1-v100"));
  EXPECT_DOUBLE_EQ(slow.path.bottleneck_gbps, 25);  // an NV1 hop
  EXPECT_DOUBLE_EQ(slow.path.latency_us, 0.7);       // two hops beat one at the same width
  EXPECT_EQ(slow.sources_searched, 8);
  const RankPairRoute sampled = slowest_route(load_topology("flat:ranks=40"), 10);
  EXPECT_EQ(sampled.sources_searched, 10);
  EXPECT_DOUBLE_EQ(sampled.path.latency_us, 5);
}

// The search is budgeted by what a source costs (its graph search plus the hops of its routes),
// so a machine with long routes searches fewer sources: the summary stays linear in its size.
TEST(TopologyReport, TheBudgetBoundsTheSourcesSearched) {
  const Topology torus = load_topology("torus:dims=16x16");
  const RankPairRoute all = slowest_route(torus, 256, std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(all.sources_searched, 256);
  EXPECT_EQ(slowest_route(torus, 256, 1).sources_searched, 1);  // source 0 is always searched
  // One source of this torus: 256 GPUs, 1,024 links, and routes of 0..16 hops (8 on average) to
  // its 256 ranks, each counted with one more: 256 + 1,024 + 256 * 9 = 3,584.
  const RankPairRoute ten = slowest_route(torus, 256, 10 * 3584);
  EXPECT_EQ(ten.sources_searched, 10);
  EXPECT_EQ(slowest_route(torus, 256, 10 * 3584 - 1).sources_searched, 9);
  // Every source of a torus sees the same worst route: a sample finds it.
  EXPECT_DOUBLE_EQ(ten.path.latency_us, all.path.latency_us);
  EXPECT_EQ(ten.path.links.size(), all.path.links.size());
}

TEST(TopologyReport, DotHasClustersRanksAndDuplexEdges) {
  const std::string dot = to_dot(load_topology("flat:ranks=2,nodes=2"));
  EXPECT_THAT(dot, HasSubstr("digraph \"flat:ranks=2,nodes=2\" {"));
  EXPECT_THAT(dot, HasSubstr("subgraph \"cluster_1\" {\n    label=\"node1\";"));
  EXPECT_THAT(dot, HasSubstr("\"node1/rank1\" [shape=box, label=\"node1/rank1\\nrank 1\"];"));
  EXPECT_THAT(dot, HasSubstr("\"node0/rank0\" -> \"crossbar\" [label=\"net 12.5 GB/s\", dir=both];"));
  EXPECT_EQ(dot.back(), '\n');
}

}  // namespace
}  // namespace colltune::topo
