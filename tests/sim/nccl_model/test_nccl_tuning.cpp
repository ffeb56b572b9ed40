// NCCL's tuning tables (src/graph/tuning.cc) against values computed by hand from NCCL's
// formulas, and its enablement rules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "colltune/sim/nccl_model.hpp"

namespace {

using namespace colltune;
using namespace colltune::sim;

constexpr auto AR = NcclColl::allreduce;

NcclModel model(const std::string& spec, const char* version = "2.28") {
  NcclOptions o;
  o.version = NcclVersion::parse(version);
  return NcclModel(topo::load_topology(spec), o);
}

// One DGX H100, 2.28: rings of 12 channels x 30 GB/s (busBw 360), 8 ranks, 14 steps.
TEST(NcclTuning, RingOnOneH100) {
  const NcclModel m = model("dgx-h100");
  // LL: min(llMaxBw[Hopper][1 node] = 141, 360/2) = 141; x 8/14 to algorithm bandwidth.
  EXPECT_NEAR(m.bandwidth(AR, NcclAlgo::ring, NcclProto::ll), 141.0 * 8 / 14, 1e-3);
  // Latency: base 6.6 + 14 steps x NVLink 0.6.
  EXPECT_NEAR(m.latency(AR, NcclAlgo::ring, NcclProto::ll), 6.6 + 14 * 0.6, 1e-4);
  // LL128: min(0.92 x 360, 12 x 36.7) = 331.2; latency 14 + 14 x 1.9.
  EXPECT_NEAR(m.bandwidth(AR, NcclAlgo::ring, NcclProto::ll128), 331.2 * 8 / 14, 1e-3);
  EXPECT_NEAR(m.latency(AR, NcclAlgo::ring, NcclProto::ll128), 14 + 14 * 1.9, 1e-4);
  // Simple: 360; latency 8.4 + 14 x 3.4.
  EXPECT_NEAR(m.bandwidth(AR, NcclAlgo::ring, NcclProto::simple), 360.0 * 8 / 14, 1e-3);
  EXPECT_NEAR(m.latency(AR, NcclAlgo::ring, NcclProto::simple), 8.4 + 14 * 3.4, 1e-4);
  // Time = latency + bytes / (1000 x bw): 1 MiB over LL.
  const double t = (6.6 + 14 * 0.6) + 1048576.0 / (1000.0 * 141.0 * 8 / 14);
  EXPECT_NEAR(m.time_us(NcclAlgo::ring, NcclProto::ll, AR, 1 << 20), t, 1e-3 * t);
}

// NVLS on one DGX H100: 8 channels, bwIntra 40, bwInter 60. Per channel
// min(40 x 0.85 x 7/8 x 2 = 59.5, 60) = 59.5; busBw 8 x 59.5 = 476; x 8/14. Its latency is the
// NVLink NVLS latency alone (25 us), which replaces the base latency.
TEST(NcclTuning, NvlsOnOneH100) {
  const NcclModel m = model("dgx-h100");
  EXPECT_NEAR(m.bandwidth(AR, NcclAlgo::nvls, NcclProto::simple), 476.0 * 8 / 14, 1e-3);
  EXPECT_NEAR(m.latency(AR, NcclAlgo::nvls, NcclProto::simple), 25.0, 1e-6);
  // 2.21: min(bwIntra, bwInter) = 40 per channel, 320, x 5/6.
  const NcclModel old = model("dgx-h100", "2.21");
  EXPECT_NEAR(old.bandwidth(AR, NcclAlgo::nvls, NcclProto::simple), 320.0 * 5 / 6, 1e-3);
  // NVLS has no LL/LL128, NVLSTree needs several nodes.
  EXPECT_EQ(m.bandwidth(AR, NcclAlgo::nvls, NcclProto::ll), 0.0f);
  EXPECT_EQ(m.bandwidth(AR, NcclAlgo::nvls_tree, NcclProto::simple), 0.0f);
  EXPECT_TRUE(std::isinf(m.time_us(NcclAlgo::nvls_tree, NcclProto::simple, AR, 1 << 20)));
}

// Tree on 4 DGX H100 (2.28): 8 simple-pattern trees at 48 GB/s network speed; nNodes > 2
// takes bwInter. busBw 384 -> min(0.92 x 384, 8 x perChMaxTreeBw[Hopper][3+ nodes] 36) = 288.
TEST(NcclTuning, TreeOnFourH100) {
  const NcclModel m = model("dgx-h100:nodes=4");
  // Simple: 288 x 0.85 (simple tree pattern) x 0.5.
  EXPECT_NEAR(m.bandwidth(AR, NcclAlgo::tree, NcclProto::simple), 288 * 0.85 * 0.5, 1e-3);
  // LL: min(288 / 3.8, llMaxBw[Intel row][3+ nodes] 20.4) = 20.4, x 0.85 x 0.5.
  EXPECT_NEAR(m.bandwidth(AR, NcclAlgo::tree, NcclProto::ll), 20.4 * 0.85 * 0.5, 1e-4);
  // LL128: min(288 x 120/128 = 270, 8 x perChMaxTreeLL128Bw[Hopper][3+] 29 = 232) x 0.85 x 0.5.
  EXPECT_NEAR(m.bandwidth(AR, NcclAlgo::tree, NcclProto::ll128), 232 * 0.85 * 0.5, 1e-3);
  // Latency: base + 2 x ((ppn-1) x NVLink + log2(nodes) x network).
  EXPECT_NEAR(m.latency(AR, NcclAlgo::tree, NcclProto::simple), 8.4 + 2 * (7 * 4.0 + 2 * 14.0), 1e-4);
  EXPECT_NEAR(m.latency(AR, NcclAlgo::tree, NcclProto::ll), 6.8 + 2 * (7 * 0.6 + 2 * 5.0), 1e-4);
  // 2.21: Tree/Simple base 0 and 28 us per hop.
  EXPECT_NEAR(model("dgx-h100:nodes=4", "2.21").latency(AR, NcclAlgo::tree, NcclProto::simple),
              0 + 2 * (7 * 28.0 + 2 * 28.0), 1e-3);
}

// Ring latency on 4 DGX H100: 62 steps, 6 of them across nodes (2.28; 2.21 counted 8).
// Intra steps pay max(NVLink 3.4, net overhead 1 x 3 for Simple); network steps 14. Large
// Simple allreduces pay 1.4x that latency (NCCL's "plateau" factor from sm80).
TEST(NcclTuning, RingLatencyAcrossNodes) {
  const NcclModel m = model("dgx-h100:nodes=4");
  const double lat = 8.4 + 56 * 3.4 + 6 * 14.0;
  EXPECT_NEAR(m.latency(AR, NcclAlgo::ring, NcclProto::simple), lat, 1e-3);
  const double bw = m.bandwidth(AR, NcclAlgo::ring, NcclProto::simple);
  const std::size_t big = std::size_t(1) << 30;
  EXPECT_NEAR(m.time_us(NcclAlgo::ring, NcclProto::simple, AR, big), lat * 1.4 + big / (1000.0 * bw), 1e-2);
  EXPECT_NEAR(model("dgx-h100:nodes=4", "2.21").latency(AR, NcclAlgo::ring, NcclProto::simple),
              8.4 + 54 * 3.4 + 8 * 14.0, 1e-3);
  // LL on an AMD machine: net overhead 2 us outweighs NVLink's 0.6.
  NcclOptions amd;
  amd.cpu = NcclCpu::amd;
  const NcclModel a100(topo::load_topology("dgx-a100:nodes=4"), amd);
  EXPECT_NEAR(a100.latency(AR, NcclAlgo::ring, NcclProto::ll), 6.6 + 56 * 2.0 + 6 * 2.7, 1e-3);
}

// Tree correction: the tree's bandwidth scaled by treeCorrectionFactor[proto][log2(bytes/64)].
TEST(NcclTuning, TreeCorrectionBySize) {
  const NcclModel m = model("dgx-h100:nodes=4");
  const double bw = m.bandwidth(AR, NcclAlgo::tree, NcclProto::simple);
  const double lat = m.latency(AR, NcclAlgo::tree, NcclProto::simple);
  // 1 MiB: log2(2^20 / 64) = 14 -> Simple factor 0.5.
  EXPECT_NEAR(m.time_us(NcclAlgo::tree, NcclProto::simple, AR, 1 << 20), lat + 1048576.0 / (1000 * bw * 0.5), 1e-3);
  // 1 GiB: index 24, beyond the table: no correction.
  const std::size_t g = std::size_t(1) << 30;
  EXPECT_NEAR(m.time_us(NcclAlgo::tree, NcclProto::simple, AR, g), lat + g / (1000 * bw), 1e-1);
}

TEST(NcclTuning, Ll128OnlyWhereNcclEnablesIt) {
  // NVLink paths: on. PCIe-only machine (SYS paths): off, as are all LL128 cells there.
  EXPECT_GT(model("dgx-h100").bandwidth(AR, NcclAlgo::ring, NcclProto::ll128), 0.0f);
  EXPECT_EQ(model("pcie-box").bandwidth(AR, NcclAlgo::ring, NcclProto::ll128), 0.0f);
  EXPECT_GT(model("pcie-box").bandwidth(AR, NcclAlgo::ring, NcclProto::ll), 0.0f);
  // Asking for LL128 explicitly overrides NCCL's rule (protoEnable 1 instead of 2).
  NcclOptions o;
  o.proto_env = "LL128";
  EXPECT_GT(NcclModel(topo::load_topology("pcie-box"), o).bandwidth(AR, NcclAlgo::ring, NcclProto::ll128), 0.0f);
}

TEST(NcclTuning, CollNetAndMultiNodeNvlsNeedSharp) {
  const NcclModel plain = model("dgx-h100:nodes=4");
  EXPECT_EQ(plain.bandwidth(AR, NcclAlgo::nvls, NcclProto::simple), 0.0f);  // NVLS across nodes needs CollNet
  EXPECT_GT(plain.bandwidth(AR, NcclAlgo::nvls_tree, NcclProto::simple), 0.0f);
  EXPECT_EQ(plain.bandwidth(AR, NcclAlgo::collnet_direct, NcclProto::simple), 0.0f);
  NcclOptions o;
  o.collnet = true;
  const NcclModel sharp(topo::load_topology("dgx-h100:nodes=4,sharp=1"), o);
  EXPECT_GT(sharp.bandwidth(AR, NcclAlgo::nvls, NcclProto::simple), 0.0f);
  EXPECT_GT(sharp.bandwidth(AR, NcclAlgo::collnet_direct, NcclProto::simple), 0.0f);
  EXPECT_GT(sharp.bandwidth(AR, NcclAlgo::collnet_chain, NcclProto::simple), 0.0f);
  EXPECT_EQ(sharp.bandwidth(AR, NcclAlgo::collnet_chain, NcclProto::ll), 0.0f);  // Simple only
}

// PAT: allgather/reduce-scatter with one GPU per node, from 2.23 (absent in 2.21).
TEST(NcclTuning, PatRules) {
  NcclOptions o;
  o.compute_capability = 90;
  const topo::Topology flat = topo::load_topology("flat:ranks=8");
  const NcclModel m(flat, o);
  EXPECT_GT(m.bandwidth(NcclColl::allgather, NcclAlgo::pat, NcclProto::simple), 0.0f);
  EXPECT_EQ(m.bandwidth(NcclColl::allreduce, NcclAlgo::pat, NcclProto::simple), 0.0f);
  EXPECT_EQ(m.bandwidth(NcclColl::allgather, NcclAlgo::pat, NcclProto::ll), 0.0f);
  EXPECT_EQ(model("dgx-h100:nodes=2").bandwidth(NcclColl::allgather, NcclAlgo::pat, NcclProto::simple), 0.0f);
  o.version = NcclVersion::parse("2.21");
  EXPECT_EQ(NcclModel(flat, o).bandwidth(NcclColl::allgather, NcclAlgo::pat, NcclProto::simple), 0.0f);
  // PAT latency: base 8 + log2(nodes) x network/3.5 + 2.8 per rank (Tree's network figure at 1 GPU/node).
  EXPECT_NEAR(m.latency(NcclColl::allgather, NcclAlgo::pat, NcclProto::simple), 8 + 3 * (14.0 / 3.5) + 8 * 2.8, 1e-3);
}

// The table handed to the tuner plugin: -1 where NCCL offers nothing, every algorithm's
// non-Simple cells -1 where it has no such protocol, and one rank costs nothing.
TEST(NcclTuning, CostTableShape) {
  const NcclModel m = model("dgx-h100");
  const NcclCostTable table = m.cost_table(AR, 1 << 20);
  const auto at = [&](NcclAlgo a, NcclProto p) {
    return table[static_cast<std::size_t>(index_of(a))][static_cast<std::size_t>(index_of(p))];
  };
  EXPECT_EQ(at(NcclAlgo::collnet_direct, NcclProto::simple), -1.0f);
  EXPECT_EQ(at(NcclAlgo::nvls_tree, NcclProto::simple), -1.0f);
  EXPECT_EQ(at(NcclAlgo::nvls, NcclProto::ll), -1.0f);
  EXPECT_EQ(at(NcclAlgo::pat, NcclProto::simple), -1.0f);
  EXPECT_GT(at(NcclAlgo::ring, NcclProto::ll), 0.0f);
  EXPECT_FLOAT_EQ(at(NcclAlgo::ring, NcclProto::ll),
                  static_cast<float>(m.time_us(NcclAlgo::ring, NcclProto::ll, AR, 1 << 20)));
  // Broadcast and reduce: ring only.
  const NcclCostTable bcast = m.cost_table(NcclColl::broadcast, 1 << 20);
  EXPECT_EQ(bcast[static_cast<std::size_t>(index_of(NcclAlgo::tree))][2], -1.0f);
  EXPECT_GT(bcast[static_cast<std::size_t>(index_of(NcclAlgo::ring))][2], 0.0f);
  NcclOptions one;
  one.nranks = 1;
  const NcclCostTable single = NcclModel(topo::load_topology("dgx-h100"), one).cost_table(AR, 1 << 20);
  EXPECT_EQ(single[static_cast<std::size_t>(index_of(NcclAlgo::ring))][2], 0.0f);
  EXPECT_EQ(single[static_cast<std::size_t>(index_of(NcclAlgo::ring))][0], -1.0f);
}

TEST(NcclTuning, BusFactors) {
  EXPECT_DOUBLE_EQ(nccl_bus_factor(AR, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclColl::allgather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclColl::broadcast, 8), 1.0);
}

}  // namespace

namespace {

// latency_parts splits every cell's latency as NCCL's formula counts it: the parts add up to the
// table's latency (NCCL's float arithmetic) on every collective, algorithm and protocol.
TEST(NcclTuning, LatencyPartsAddUpToTheLatency) {
  for (const char* spec : {"dgx-h100", "dgx-h100:nodes=4", "dgx-a100:nodes=2", "pcie-box", "fat-tree:nodes=3,sharp=1"})
    for (const char* version : {"2.21", "2.28", "2.30"}) {
      NcclOptions o;
      o.version = NcclVersion::parse(version);
      o.collnet = true;
      const NcclModel m(topo::load_topology(spec), o);
      for (NcclColl c : {NcclColl::allreduce, NcclColl::allgather, NcclColl::reduce_scatter, NcclColl::broadcast})
        for (NcclAlgo a : kNcclAlgos)
          for (NcclProto p : kNcclProtos) {
            const NcclLatencyParts l = m.latency_parts(c, a, p);
            const double sum = l.base_us + l.intra_steps * l.intra_us + l.inter_steps * l.inter_us;
            EXPECT_NEAR(sum, m.latency(c, a, p), 1e-4 * std::max(1.0, sum)) << spec << " " << version << " "
                                                                           << to_string(c) << " " << to_string(a)
                                                                           << " " << to_string(p);
          }
    }
  // Ring allreduce on 4 H100 nodes: 62 steps, 6 of them across nodes; NVLS replaces the base.
  const NcclLatencyParts ring = model("dgx-h100:nodes=4").latency_parts(AR, NcclAlgo::ring, NcclProto::ll);
  EXPECT_EQ(ring.intra_steps, 56);
  EXPECT_EQ(ring.inter_steps, 6);
  const NcclLatencyParts nvls = model("dgx-h100").latency_parts(AR, NcclAlgo::nvls, NcclProto::simple);
  EXPECT_EQ(nvls.base_us, 0);
  EXPECT_NEAR(nvls.intra_us, 25, 1e-6);
}

}  // namespace
