// NCCL's channel search on every preset. Each expectation is worked out by hand from NCCL's
// search (src/graph/search.cc) with NCCL's link figures; the comments give the reasoning.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/nccl_model.hpp"

namespace {

using namespace colltune;
using namespace colltune::sim;

NcclModel model(const std::string& spec, NcclOptions o = {}) { return NcclModel(topo::load_topology(spec), o); }

bool is_permutation_of_node(const std::vector<int>& order, int ppn) {
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < ppn; ++i)
    if (sorted[static_cast<std::size_t>(i)] != i) return false;
  return static_cast<int>(order.size()) == ppn;
}

// DGX H100: 18 NVLink4 links x 20.6 = 370.8 GB/s per GPU into the NVSwitch. Rings on sm90
// start at 60 GB/s: 6 rings (360 <= 370.8 < 420), not the whole 370.8, so slower speeds are
// tried while they stay above .49 x 60 (50: 7 x 50 = 350, 40: 9 x 40 = 360, 30: 12 x 30 = 360;
// none better). The 6 x 60 rings are duplicated into 12 x 30 (speed >= 50). Pass 2 finds no
// 12 rings above 30. Trees: 12 chains at 30 (12 x 30 <= 370.8 x 8/7). NVLS: every GPU
// carries 9 speeds (its own head channel twice) over 8 channels: 40 (9 x 40 = 360); pass 2
// then raises the network speed to 60. The kernels run 24 ring/tree channels (x2 at
// connection) and 16 NVLS channels.
TEST(NcclSearch, DgxH100OneNode) {
  const NcclModel m = model("dgx-h100");
  const ChannelPlan& ring = m.channels(NcclAlgo::ring);
  EXPECT_EQ(ring.channels, 12);
  EXPECT_DOUBLE_EQ(ring.bw_intra, 30.0);
  EXPECT_EQ(ring.type_intra, NcclPath::nvl);
  EXPECT_TRUE(ring.same_channels);
  for (const auto& order : ring.orders) EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m.channels(NcclAlgo::tree).channels, 12);
  EXPECT_DOUBLE_EQ(m.channels(NcclAlgo::tree).bw_intra, 30.0);
  const ChannelPlan& nvls = m.channels(NcclAlgo::nvls);
  EXPECT_EQ(nvls.channels, 8);
  EXPECT_DOUBLE_EQ(nvls.bw_intra, 40.0);
  EXPECT_DOUBLE_EQ(nvls.bw_inter, 60.0);
  for (int c = 0; c < 8; ++c) EXPECT_EQ(nvls.orders[static_cast<std::size_t>(c)][0], c);  // one head per GPU
  EXPECT_EQ(m.system().comm_channels, 24);
  EXPECT_EQ(m.system().nvls_channels, 16);
  EXPECT_NEAR(m.system().total_bw, 370.8, 1e-4);
  EXPECT_TRUE(m.system().nvls_support);
}

// DGX A100: 12 NVLink3 links x 20 = 240. Pre-Hopper speeds start at 40: 6 rings cover all
// 240 (done at once), duplicated to 12 x 20 (sm80 duplicates any speed >= 25). nccl-tests
// issue 100's log of an HGX A100 shows the same: "Channel 19/24 : 0 1 2 3 4 5 6 7".
TEST(NcclSearch, DgxA100OneNode) {
  const NcclModel m = model("dgx-a100");
  EXPECT_EQ(m.channels(NcclAlgo::ring).channels, 12);
  EXPECT_DOUBLE_EQ(m.channels(NcclAlgo::ring).bw_intra, 20.0);
  EXPECT_EQ(m.channels(NcclAlgo::tree).channels, 12);
  EXPECT_EQ(m.system().comm_channels, 24);
  EXPECT_FALSE(m.system().nvls_support);  // second-generation NVSwitch
  EXPECT_EQ(m.channels(NcclAlgo::nvls).channels, 0);
}

// DGX-1V hybrid cube-mesh: no NVSwitch, so rings must follow NVLink edges. At 40 GB/s only
// the double links qualify: the cycle 0-3-2-1-5-6-7-4 both ways (2 x 40 = 80 < 120). At 20
// every link qualifies and the search fills all six links of every GPU: 6 rings x 20 = 120,
// the double-link cycle twice each way plus the single-link cycle 0-1-3-7-5-4-6-2 each way.
// Speed 20 < 25: no duplication. 12 kernel channels.
TEST(NcclSearch, Dgx1V100RingsFollowNvlinkEdges) {
  const NcclModel m = model("dgx1-v100");
  const ChannelPlan& ring = m.channels(NcclAlgo::ring);
  ASSERT_EQ(ring.channels, 6);
  EXPECT_DOUBLE_EQ(ring.bw_intra, 20.0);
  EXPECT_FALSE(ring.same_channels);
  EXPECT_EQ(ring.orders[0], (std::vector<int>{0, 3, 2, 1, 5, 6, 7, 4}));
  // NVLink link counts of the preset's mesh (i < j): every hop of every ring is an NVLink
  // edge, and no edge carries more rings in one direction than it has links.
  const std::map<std::pair<int, int>, int> links = {
      {{0, 1}, 1}, {{0, 2}, 1}, {{0, 3}, 2}, {{0, 4}, 2}, {{1, 2}, 2}, {{1, 3}, 1}, {{1, 5}, 2}, {{2, 3}, 2},
      {{2, 6}, 1}, {{3, 7}, 1}, {{4, 5}, 1}, {{4, 6}, 1}, {{4, 7}, 2}, {{5, 6}, 2}, {{5, 7}, 1}, {{6, 7}, 2}};
  std::map<std::pair<int, int>, int> used;  // directed
  for (const auto& order : ring.orders) {
    ASSERT_TRUE(is_permutation_of_node(order, 8));
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int a = order[i], b = order[(i + 1) % order.size()];
      ASSERT_TRUE(links.count({std::min(a, b), std::max(a, b)})) << a << "->" << b << " is no NVLink edge";
      ++used[{a, b}];
    }
  }
  for (const auto& [edge, n] : used) EXPECT_LE(n, links.at({std::min(edge.first, edge.second), std::max(edge.first, edge.second)}));
  EXPECT_EQ(m.system().comm_channels, 12);
}

// pcie-box: 8 L40S-class GPUs, two per PCIe Gen4 switch (24 GB/s in NCCL's figures), two
// Sapphire Rapids sockets (22 GB/s between them in NCCL's figures). A ring must cross both
// sockets, so only a SYS-typed ring exists; at 20 GB/s one fits (the PCIe hops through the CPU
// pay 6/5 on Intel: 24), at 10 two (no more in total). One channel of 20, 2 kernel channels.
TEST(NcclSearch, PcieBoxOneSlowRingAcrossSockets) {
  const NcclModel m = model("pcie-box");
  const ChannelPlan& ring = m.channels(NcclAlgo::ring);
  EXPECT_EQ(ring.channels, 1);
  EXPECT_DOUBLE_EQ(ring.bw_intra, 20.0);
  EXPECT_EQ(ring.type_intra, NcclPath::sys);
  EXPECT_EQ(ring.orders[0], (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));  // PCI order
  EXPECT_EQ(m.system().comm_channels, 2);
}

// 4 DGX H100: a channel enters from a NIC (400 Gb/s = 50 GB/s; its GPU's PCIe Gen5 x16 = 48),
// crosses all 8 GPUs over NVLink and leaves through a NIC. At 48 GB/s each NIC takes one
// channel; leaving through the entry NIC needs a PXN hop back over NVLink, which limits the
// node to 7 channels (8 x 48 > 370.8). Leaving through another NIC (cross-NIC pairs) frees
// that hop: 8 channels of 48 (384 >= 370.8 stops the search). Trees on sm90 fall back to the
// simple pattern (a balanced tree's second GPU would need a path back to the NIC that is
// not wider than the entry's type). NVLS: 8 heads, one per NIC. Kernels: 16 channels.
TEST(NcclSearch, DgxH100FourNodesRailAligned) {
  const NcclModel m = model("dgx-h100:nodes=4");
  const ChannelPlan& ring = m.channels(NcclAlgo::ring);
  EXPECT_EQ(ring.channels, 8);
  EXPECT_DOUBLE_EQ(ring.bw_inter, 48.0);
  EXPECT_TRUE(ring.cross_nic);
  std::set<int> nics(ring.nic_in.begin(), ring.nic_in.end());
  EXPECT_EQ(nics.size(), 8u);  // the channels spread over every NIC
  for (std::size_t c = 0; c < ring.orders.size(); ++c) {
    EXPECT_TRUE(is_permutation_of_node(ring.orders[c], 8));
    EXPECT_EQ(ring.orders[c][0], ring.nic_in[c]);  // entered by the GPU next to the NIC
  }
  EXPECT_TRUE(m.channels(NcclAlgo::tree).simple_tree);
  EXPECT_EQ(m.channels(NcclAlgo::nvls).channels, 8);
  EXPECT_EQ(m.system().comm_channels, 16);
  EXPECT_EQ(m.system().nnodes, 4);
  EXPECT_DOUBLE_EQ(m.system().max_bw, 48.0);
}

// 4 DGX A100: NICs of 200 Gb/s = 25 GB/s, two per PCIe Gen4 switch (24) with two GPUs. The
// first speed at most the 24 GB/s GPU-NIC path is 24: one channel per NIC, 8 x 24 = 192 (the
// 192 GB/s NVIDIA measures, nccl issue 812); 24 < 25: no duplication. Trees keep 8 channels
// and raise their NVLink speed in pass 2 to 30 (8 x 30 = 240).
TEST(NcclSearch, DgxA100FourNodes) {
  NcclOptions amd;
  amd.cpu = NcclCpu::amd;
  const NcclModel m = model("dgx-a100:nodes=4", amd);
  EXPECT_EQ(m.channels(NcclAlgo::ring).channels, 8);
  EXPECT_DOUBLE_EQ(m.channels(NcclAlgo::ring).bw_inter, 24.0);
  EXPECT_EQ(m.channels(NcclAlgo::tree).channels, 8);
  EXPECT_DOUBLE_EQ(m.channels(NcclAlgo::tree).bw_intra, 30.0);
  EXPECT_DOUBLE_EQ(m.channels(NcclAlgo::tree).bw_inter, 24.0);
  EXPECT_EQ(m.system().comm_channels, 16);
}

// fat-tree: H100-class servers like dgx-h100 (the same search result).
TEST(NcclSearch, FatTreeLikeDgxH100) {
  const NcclModel m = model("fat-tree:nodes=4");
  EXPECT_EQ(m.channels(NcclAlgo::ring).channels, 8);
  EXPECT_DOUBLE_EQ(m.channels(NcclAlgo::ring).bw_inter, 48.0);
  const NcclModel one_nic = model("fat-tree:nodes=4,nics=1");
  // One NIC of 50 GB/s per node: 1 channel at 48, nothing better below (2 x 24 = 48), then
  // duplicated (48 >= 25, and only one channel) into 2 x 24.
  EXPECT_EQ(one_nic.channels(NcclAlgo::ring).channels, 2);
  EXPECT_DOUBLE_EQ(one_nic.channels(NcclAlgo::ring).bw_inter, 24.0);
}

// torus and flat: GPUs joined only by network links. Each GPU is its own node and each of
// its network links a NIC (1 per GPU on flat, 4 on a 2-D torus); a channel per NIC at the
// speed below the link's (12 of 12.5 on flat, 24 of 25 on the torus). These presets give
// no compute capability, so the model needs one.
TEST(NcclSearch, TorusAndFlatAreNodesOfOneGpu) {
  NcclOptions o;
  EXPECT_THROW(model("flat:ranks=8", o), Error);
  o.compute_capability = 90;
  const NcclModel flat = model("flat:ranks=8", o);
  EXPECT_EQ(flat.system().nnodes, 8);
  EXPECT_EQ(flat.system().ranks_per_node, 1);
  EXPECT_EQ(flat.channels(NcclAlgo::ring).channels, 1);
  EXPECT_DOUBLE_EQ(flat.channels(NcclAlgo::ring).bw_inter, 12.0);
  const NcclModel torus = model("torus:dims=4x4", o);
  EXPECT_EQ(torus.system().nics, 4);
  EXPECT_EQ(torus.channels(NcclAlgo::ring).channels, 4);
  EXPECT_DOUBLE_EQ(torus.channels(NcclAlgo::ring).bw_inter, 24.0);
  const NcclModel hosts = model("torus:dims=4x4,per_host=4", o);
  EXPECT_EQ(hosts.system().nnodes, 4);
  EXPECT_EQ(hosts.system().ranks_per_node, 4);
}

// Part of a node: 4 of the 8 H100 still reach the whole NVSwitch; PCI order 0..3.
TEST(NcclSearch, SubsetOfANode) {
  NcclOptions o;
  o.nranks = 4;
  const NcclModel m = model("dgx-h100", o);
  EXPECT_EQ(m.system().ranks_per_node, 4);
  EXPECT_EQ(m.channels(NcclAlgo::ring).orders[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m.channels(NcclAlgo::nvls).channels, 4);
}

TEST(NcclSearch, CommunicatorMustBeWholeNodes) {
  NcclOptions o;
  o.nranks = 12;  // one and a half DGX
  EXPECT_THROW(model("dgx-h100:nodes=2", o), Error);
  o.nranks = 17;
  EXPECT_THROW(model("dgx-h100:nodes=2", o), Error);
}

// CollNet needs NCCL_COLLNET_ENABLE and switches that reduce (SHARP): a direct graph with one
// head per NIC (8) and a chain graph like the tree.
TEST(NcclSearch, CollNetGraphsWithSharp) {
  NcclOptions o;
  o.collnet = true;
  const NcclModel sharp = model("dgx-h100:nodes=4,sharp=1", o);
  EXPECT_TRUE(sharp.system().collnet_support);
  EXPECT_EQ(sharp.channels(NcclAlgo::collnet_direct).channels, 8);
  EXPECT_EQ(sharp.channels(NcclAlgo::collnet_chain).channels, 8);
  EXPECT_FALSE(model("dgx-h100:nodes=4", o).system().collnet_support);  // no SHARP switches
  EXPECT_FALSE(model("dgx-h100:nodes=4,sharp=1").system().collnet_support);  // not enabled
}

}  // namespace

// The searches are memoised by everything they read (sim::forget_nccl_searches). Machines that
// differ in one thing each search reads (one node or several, NIC speed, NVLink speed, GPU
// generation, PCIe switch layout, CPU, PXN where a GPU's NIC sits behind another GPU's switch,
// compute capability) answer, searched one after the
// other with every earlier search kept, what each answers searched alone; and where the thing
// changes the search's answer, the answers differ (so a key that left it out would be caught).
TEST(NcclSearch, MemoisedSearchesAnswerAsFreshOnes) {
  struct Machine {
    std::string spec;
    NcclOptions options;
  };
  NcclOptions skl, no_pxn, cc70;
  skl.cpu = NcclCpu::intel_skl;
  no_pxn.pxn = false;
  cc70.compute_capability = 70;
  const std::vector<Machine> machines = {
      {"dgx-h100", {}},
      {"dgx-h100:nodes=2", {}},
      {"dgx-h100:nodes=2,nic_gbit=100", {}},
      {"dgx-a100:nodes=2", {}},
      {"fat-tree:nodes=2,gpu=a100,nvlink=300,nic_gbit=200", {}},
      {"fat-tree:nodes=2,gpu=a100,nvlink=600,nic_gbit=200", {}},
      {"fat-tree:nodes=2,gpu=a100,nvlink=300,nic_gbit=200,per_switch=1", {}},
      {"fat-tree:nodes=2,gpu=v100,nic_gbit=100", {}},
      {"pcie-box:nodes=2,gpu=v100", {}},
      {"pcie-box:nodes=2,gpu=v100", skl},
      {"fat-tree:nodes=2,gpu=a100,nvlink=300,nic_gbit=200,per_switch=1", no_pxn},
      {"flat:ranks=8", cc70},
  };
  // Everything a model keeps of its searches, as text.
  const auto answer = [](const Machine& m) {
    const NcclModel model(topo::load_topology(m.spec), m.options);
    std::ostringstream out;
    for (NcclAlgo algo : {NcclAlgo::ring, NcclAlgo::tree, NcclAlgo::nvls, NcclAlgo::collnet_direct}) {
      const ChannelPlan& c = model.channels(algo);
      out << c.channels << ' ' << c.bw_intra << ' ' << c.bw_inter << ' ' << static_cast<int>(c.type_intra) << ' '
          << static_cast<int>(c.type_inter) << ' ' << c.same_channels << c.cross_nic << c.simple_tree;
      for (const auto& order : c.orders)
        for (int g : order) out << ' ' << g;
      for (int nic : c.nic_in) out << ' ' << nic;
      for (int nic : c.nic_out) out << ' ' << nic;
      out << ';';
    }
    out << model.system().comm_channels;
    return out.str();
  };
  std::vector<std::string> alone;
  for (const Machine& m : machines) {
    forget_nccl_searches();
    alone.push_back(answer(m));
  }
  forget_nccl_searches();
  for (std::size_t i = 0; i < machines.size(); ++i) {
    SCOPED_TRACE(machines[i].spec);
    EXPECT_EQ(answer(machines[i]), alone[i]);
  }
  // Each change above changes the answer, but the two descriptions of one DGX A100 cluster.
  std::set<std::string> distinct(alone.begin(), alone.end());
  EXPECT_EQ(distinct.size(), machines.size() - 1);
  EXPECT_EQ(alone[3], alone[4]);
}

// nccl#2441: two H100 NVL per AMD EPYC 9534 host, no NVLink between them, the Slingshot NIC on a
// third NUMA node (dumps written from the thread's facts, tests/data/nccl-tests-logs/SOURCES.md).
// Every GPU-NIC path crosses NCCL's inter-CPU link (SYS): the release's dump (family 175) gives
// it 16 GB/s, the per-generation build's (family 25) 24, and the rings' network speed follows:
// sm90's speeds (..., 30, 24, 22, 20, 17.5, 15, ...), the first at most the path's, 15 and
// 24. `--cpu` (the option) overrides what the dump says.
TEST(NcclSearch, AmdInterCpuBandwidthAsTheDumpClassesTheCpu) {
  const std::string dir = std::string(COLLTUNE_TEST_DATA) + "/nccl-tests-logs/";
  const NcclModel good = model(dir + "nccl-2441-topo-good-commit.xml:nodes=2");
  const NcclModel bad = model(dir + "nccl-2441-topo-bad-commit.xml:nodes=2");
  EXPECT_EQ(good.system().cpu, NcclCpu::amd);
  EXPECT_EQ(bad.system().cpu, NcclCpu::amd_zen34);
  EXPECT_EQ(good.channels(NcclAlgo::ring).type_inter, NcclPath::sys);
  EXPECT_DOUBLE_EQ(good.channels(NcclAlgo::ring).bw_inter, 15.0);
  EXPECT_DOUBLE_EQ(bad.channels(NcclAlgo::ring).bw_inter, 24.0);
  NcclOptions zen34;
  zen34.cpu = NcclCpu::amd_zen34;
  EXPECT_DOUBLE_EQ(model(dir + "nccl-2441-topo-good-commit.xml:nodes=2", zen34).channels(NcclAlgo::ring).bw_inter,
                   24.0);
}
