// The simulator's load: a ring over a 4096-GPU fat-tree (512 hosts x 8 GPUs) asks route() for
// every ring-neighbour pair. Checks every route's shape and figures (speed: bench/).
#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

// A route must be a chain of links from the source rank's device to the destination's.
void expect_chain(const Topology& t, const Path& p, VertexId from, VertexId to) {
  VertexId at = from;
  for (std::size_t l : p.links) {
    ASSERT_EQ(t.link_source(l), at);
    at = t.link_target(l);
  }
  EXPECT_EQ(at, to);
}

TEST(FatTreeRoutes, RingNeighboursOf4096Gpus) {
  // Defaults: 8 NICs of 400 Gb/s per host, 32 NIC ports per leaf -> 4 hosts per leaf, 128 leaves.
  const Topology t = load_topology("fat-tree:nodes=512,gpus=8");
  ASSERT_EQ(t.num_ranks(), 4096);
  int same_host = 0, same_leaf = 0, cross_leaf = 0;
  for (int r = 0; r < 4096; ++r) {
    const int next = (r + 1) % 4096;
    const Path& p = t.route(r, next);
    expect_chain(t, p, t.device_of_rank(r), t.device_of_rank(next));
    const int host = r / 8, next_host = next / 8;
    if (host == next_host) {
      ++same_host;  // GPU -> NVSwitch -> GPU
      EXPECT_EQ(p.links.size(), 2u);
      EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 450);
      EXPECT_DOUBLE_EQ(p.latency_us, 0.7);
    } else if (host / 4 == next_host / 4) {
      ++same_leaf;  // GPU -> PCIe -> NIC -> leaf -> NIC -> PCIe -> GPU
      EXPECT_EQ(p.links.size(), 6u);
      EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 50);
      EXPECT_DOUBLE_EQ(p.latency_us, 4.0);
    } else {
      ++cross_leaf;  // ... leaf -> spine -> leaf ...
      EXPECT_EQ(p.links.size(), 8u);
      EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 50);
      EXPECT_DOUBLE_EQ(p.latency_us, 6.0);
    }
  }
  EXPECT_EQ(same_host, 512 * 7);
  EXPECT_EQ(cross_leaf, 128);  // 127 leaf boundaries + the wrap from the last host to the first
  EXPECT_EQ(same_leaf, 4096 - 512 * 7 - 128);
  // The cached route and a full single-source search agree.
  const std::vector<Path> from = t.routes_from(4095);
  EXPECT_EQ(from[0].links, t.route(4095, 0).links);
  EXPECT_DOUBLE_EQ(t.widest_bandwidth(7, 8), 50);
}

}  // namespace
}  // namespace colltune::topo
