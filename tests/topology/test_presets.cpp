// Presets: every figure below is computed by hand from the preset's documented hardware.
#include "colltune/topology/presets.hpp"

#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

using test::error_of;
using ::testing::HasSubstr;

constexpr double kGen5x16 = 32.0 * 128 / 130 * 16 / 8;  // 63.015 GB/s
constexpr double kGen4x16 = 16.0 * 128 / 130 * 16 / 8;  // 31.508 GB/s
constexpr double kGen3x16 = 8.0 * 128 / 130 * 16 / 8;   // 15.754 GB/s

void expect_route(const Topology& t, int a, int b, double gbps, double us, std::size_t hops) {
  const Path& p = t.route(a, b);
  EXPECT_NEAR(p.bottleneck_gbps, gbps, 1e-9) << a << "->" << b;
  EXPECT_NEAR(p.latency_us, us, 1e-9) << a << "->" << b;
  EXPECT_EQ(p.links.size(), hops) << a << "->" << b;
}

TEST(Presets, EveryPresetLoadsAndValidates) {
  for (const PresetInfo& info : preset_catalog()) {
    const Topology t = load_topology(info.name);
    EXPECT_GT(t.num_ranks(), 0) << info.name;
    EXPECT_EQ(t.name, info.name);
    EXPECT_FALSE(info.summary.empty());
  }
}

TEST(Presets, DgxH100) {
  const Topology t = load_topology("dgx-h100");
  EXPECT_EQ(t.num_ranks(), 8);
  EXPECT_EQ(t.num_hosts(), 1);
  // GPU -> NVSwitch -> GPU: 18 NVLink4 links x 25 GB/s, two 0.35 us hops.
  expect_route(t, 0, 1, 450, 0.7, 2);
  expect_route(t, 7, 2, 450, 0.7, 2);
  EXPECT_DOUBLE_EQ(t.widest_bandwidth(0, 7), 450);
  EXPECT_DOUBLE_EQ(t.device(t.device_of_rank(0)).reduce_gbps, 1117);
}

TEST(Presets, DgxH100TwoNodes) {
  const Topology t = load_topology("dgx-h100:nodes=2");
  EXPECT_EQ(t.num_ranks(), 16);
  EXPECT_EQ(t.rank_layout(), RankLayout::uniform(2, 8));
  // GPU -> PCIe switch -> CX-7 -> leaf -> CX-7 -> PCIe switch -> GPU: 400 Gb/s = 50 GB/s,
  // 4 PCIe hops x 0.5 us + 2 network hops x 1 us.
  expect_route(t, 0, 8, 50, 4.0, 6);
  expect_route(t, 13, 2, 50, 4.0, 6);
  EXPECT_DOUBLE_EQ(t.widest_bandwidth(0, 8), 50);
  const Topology fast = load_topology("dgx-h100:nodes=2,nic_gbit=800");
  expect_route(fast, 0, 8, kGen5x16, 4.0, 6);  // now the Gen5 x16 PCIe link is the bottleneck
}

TEST(Presets, DgxA100) {
  const Topology t = load_topology("dgx-a100:nodes=2");
  expect_route(t, 0, 1, 300, 0.7, 2);  // 12 NVLink3 links x 25 GB/s
  expect_route(t, 0, 8, 25, 4.0, 6);   // ConnectX-6 200 Gb/s
  const auto nic = t.find_device("node0/nic0");
  ASSERT_TRUE(nic);
  EXPECT_NEAR(t.device_route(t.device_of_rank(0), *nic).bottleneck_gbps, kGen4x16, 1e-9);
}

TEST(Presets, Dgx1V100HybridCubeMesh) {
  const Topology t = load_topology("dgx1-v100");
  expect_route(t, 0, 3, 50, 0.35, 1);  // NV2: two NVLink2 links
  expect_route(t, 0, 1, 25, 0.35, 1);  // NV1
  expect_route(t, 0, 4, 50, 0.35, 1);  // the cross link between the quads
  expect_route(t, 0, 5, 25, 0.7, 2);   // no direct link: 0-1-5 or 0-4-5, each with one NV1 hop
  EXPECT_DOUBLE_EQ(t.widest_bandwidth(0, 5), 50);  // the long way, all NV2: 0-3-2-1-5
  EXPECT_DOUBLE_EQ(t.widest_bandwidth(0, 7), 50);  // 0-4 (NV2) then 4-7 (NV2)
  // Every GPU has 6 NVLink2 links: 150 GB/s out.
  for (int r = 0; r < 8; ++r) {
    double out = 0;
    for (std::size_t l : t.out_links(t.device_of_rank(r)))
      if (t.link(l).kind == LinkKind::nvlink) out += t.link(l).bandwidth_gbps;
    EXPECT_DOUBLE_EQ(out, 150) << "gpu " << r;
  }
  const auto nic = t.find_device("node0/nic0");
  ASSERT_TRUE(nic);
  EXPECT_NEAR(t.device_route(t.device_of_rank(1), *nic).bottleneck_gbps, kGen3x16, 1e-9);
}

TEST(Presets, PcieBox) {
  const Topology t = load_topology("pcie-box:gpus=4,per_switch=2,gen=4");
  expect_route(t, 0, 1, kGen4x16, 1.0, 2);  // through their PCIe switch
  // gpu0 -> switch0 -> cpu0 -> (UPI 0.6 us) cpu1 -> switch1 -> gpu2
  expect_route(t, 0, 2, kGen4x16, 2.6, 5);
  expect_route(load_topology("pcie-box:gpus=4,gen=3"), 0, 1, kGen3x16, 1.0, 2);
  for (std::size_t i = 0; i < t.num_links(); ++i) EXPECT_NE(t.link(i).kind, LinkKind::nvlink);
}

TEST(Presets, FatTreeLeafAndSpine) {
  // 8 hosts x 4 NICs, 8 NIC ports per leaf: 2 hosts per leaf, 4 leaves, one spine.
  const Topology t = load_topology("fat-tree:nodes=8,gpus=4,nics=4,leaf_ports=8,nic_gbit=400");
  EXPECT_EQ(t.num_ranks(), 32);
  expect_route(t, 0, 1, 450, 0.7, 2);   // inside a host, NVSwitch
  expect_route(t, 0, 4, 50, 4.0, 6);    // host0 -> host1, same leaf
  expect_route(t, 0, 8, 50, 6.0, 8);    // host0 -> host2: leaf0 -> spine -> leaf1
  // A leaf trunk carries 2 hosts x 4 NICs x 50 GB/s / oversub.
  const Topology thin = load_topology("fat-tree:nodes=8,gpus=4,nics=4,leaf_ports=8,oversub=16");
  expect_route(thin, 0, 8, 25, 6.0, 8);  // 400 / 16 = 25 GB/s: the shared uplink is the bottleneck
  expect_route(thin, 0, 4, 50, 4.0, 6);  // same leaf: not affected
  int trunks = 0;
  for (std::size_t i = 0; i < thin.num_links(); ++i)
    if (thin.device(thin.link_target(i)).id == "spine") {
      ++trunks;
      EXPECT_DOUBLE_EQ(thin.link(i).bandwidth_gbps, 25);
    }
  EXPECT_EQ(trunks, 4);
}

TEST(Presets, Torus) {
  const Topology t = load_topology("torus:dims=4x4,bw=25,lat=0.5");
  EXPECT_EQ(t.num_ranks(), 16);
  EXPECT_EQ(t.num_links(), 16u * 4);      // 4 neighbours each, one link per direction
  expect_route(t, 0, 10, 25, 2.0, 4);    // (0,0) -> (2,2): 4 hops
  expect_route(t, 0, 3, 25, 0.5, 1);     // (0,0) -> (0,3): wraps around
  EXPECT_EQ(load_topology("torus:dims=2x2x2").num_links(), 8u * 3);   // size 2: one link per pair
  EXPECT_EQ(load_topology("torus:dims=4x4x4").num_links(), 64u * 6);
  const Topology hosts = load_topology("torus:dims=4x4,per_host=4");
  EXPECT_EQ(hosts.rank_layout(), RankLayout::uniform(4, 4));
  EXPECT_EQ(hosts.link(hosts.route(0, 1).links[0]).kind, LinkKind::nvlink);
  EXPECT_EQ(hosts.link(hosts.route(0, 4).links[0]).kind, LinkKind::net);
}

TEST(Presets, FlatIsTheAlphaBetaMachine) {
  const Topology t = load_topology("flat:ranks=6,alpha=4,bw=10,reduce=20,nodes=3");
  EXPECT_EQ(t.rank_layout(), RankLayout::uniform(3, 2));
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b)
      if (a != b) expect_route(t, a, b, 10, 4.0, 2);
  EXPECT_DOUBLE_EQ(t.device(t.device_of_rank(3)).reduce_gbps, 20);
  EXPECT_EQ(load_topology("flat:ranks=17").num_ranks(), 17);
}

TEST(Presets, ErrorsListValidNames) {
  EXPECT_THAT(error_of([] { make_preset("dgx-h200"); }),
              HasSubstr("unknown topology preset 'dgx-h200' (valid: dgx-h100, dgx-a100, dgx1-v100, pcie-box, fat-tree, "
                        "torus, flat"));
  EXPECT_THAT(error_of([] { make_preset("dgx-h100:gpus=4"); }),
              HasSubstr("preset dgx-h100: unknown parameter 'gpus' (valid: nodes, nic_gbit, oversub, leaf_ports, sharp, transport, nvls)"));
  EXPECT_THAT(error_of([] { make_preset("dgx-h100:nodes"); }), HasSubstr("'nodes' is not key=value"));
  EXPECT_THAT(error_of([] { make_preset("dgx-h100:nodes=2,nodes=3"); }), HasSubstr("preset dgx-h100: 'nodes' is given twice"));
  EXPECT_THAT(error_of([] { make_preset("dgx-h100:nodes=0"); }), HasSubstr("nodes: '0' must be an integer in 1..65536"));
  EXPECT_THAT(error_of([] { make_preset("dgx-a100:nodes=two"); }), HasSubstr("nodes: 'two' is not a decimal integer"));
  EXPECT_THAT(error_of([] { make_preset("dgx-h100:nic_gbit=-400"); }), HasSubstr("nic_gbit: '-400' must be > 0"));
  EXPECT_THAT(error_of([] { make_preset("fat-tree:oversub=0"); }), HasSubstr("oversub: '0' must be > 0"));
  EXPECT_THAT(error_of([] { make_preset("pcie-box:gen=7"); }), HasSubstr("gen: '7' must be an integer in 1..6"));
  EXPECT_THAT(error_of([] { make_preset("torus:dims=4x0"); }), HasSubstr("dims: '4x0' must be sizes like 4x4"));
  EXPECT_THAT(error_of([] { make_preset("torus:dims=16"); }), HasSubstr("2 or 3 dimensions"));
  EXPECT_THAT(error_of([] { make_preset("torus:dims=4x4,per_host=3"); }), HasSubstr("per_host=3 does not divide"));
  EXPECT_THAT(error_of([] { make_preset("torus:dims=64x64x64"); }), HasSubstr("262144 GPUs: above the limit of 131072 ranks"));
  EXPECT_THAT(error_of([] { make_preset("flat:bw=0"); }), HasSubstr("bw: '0' must be > 0"));
  EXPECT_THAT(error_of([] { make_preset("flat:ranks=5,nodes=2"); }), HasSubstr("nodes=2 does not divide ranks=5"));
  EXPECT_THAT(error_of([] { make_preset("flat:alpha=1e400"); }), HasSubstr("alpha: '1e400' is not a finite decimal number"));
  // One rule for a reduce rate, as in the JSON format: 0 (reductions cost nothing) or a positive
  // rate, in flat and torus alike (flat once refused 0).
  EXPECT_EQ(make_preset("flat:reduce=0").device(make_preset("flat:reduce=0").device_of_rank(0)).reduce_gbps, 0);
  EXPECT_EQ(make_preset("torus:reduce=0").device(make_preset("torus:reduce=0").device_of_rank(0)).reduce_gbps, 0);
  EXPECT_THAT(error_of([] { make_preset("flat:reduce=-1"); }), HasSubstr("preset flat: reduce: '-1' must be >= 0"));
  EXPECT_THAT(error_of([] { make_preset("torus:reduce=-1"); }), HasSubstr("preset torus: reduce: '-1' must be >= 0"));
  EXPECT_THAT(error_of([] { make_preset("flat:ranks=4,"); }), HasSubstr("has an empty item"));
  // Numbers are plain decimals: no hex, no spaces around them.
  EXPECT_THAT(error_of([] { make_preset("flat:alpha=0x10"); }), HasSubstr("alpha: '0x10' is not a finite decimal number"));
  EXPECT_THAT(error_of([] { make_preset("flat:bw= 4"); }), HasSubstr("bw: ' 4' is not a finite decimal number"));
  EXPECT_THAT(error_of([] { make_preset("flat:bw=4 "); }), HasSubstr("bw: '4 ' is not a finite decimal number"));
  EXPECT_THAT(error_of([] { make_preset("flat:bw=inf"); }), HasSubstr("bw: 'inf' is not a finite decimal number"));
  EXPECT_THAT(error_of([] { make_preset("flat:bw="); }), HasSubstr("bw: '' is not a finite decimal number"));
  EXPECT_DOUBLE_EQ(make_preset("flat:ranks=2,bw=2.5e1").route(0, 1).bottleneck_gbps, 25);
}

// What each preset says its hardware can do: GPU generation, NVLS in the NVSwitch (Hopper and
// later), SHARP in the network switches only when asked for.
TEST(Presets, CapabilitiesOfTheHardware) {
  auto nvswitch_of = [](const Topology& t) { return t.device(*t.find_device("node0/nvswitch")).switch_reduction; };
  const Topology h100 = make_preset("dgx-h100:nodes=2");
  EXPECT_EQ(h100.device(h100.device_of_rank(0)).compute_capability, 90);
  EXPECT_EQ(nvswitch_of(h100), SwitchReduction::nvls);
  EXPECT_EQ(h100.device(*h100.find_device("leaf0")).switch_reduction, SwitchReduction::none);
  const Topology a100 = make_preset("dgx-a100");
  EXPECT_EQ(a100.device(a100.device_of_rank(7)).compute_capability, 80);
  EXPECT_EQ(nvswitch_of(a100), SwitchReduction::none);
  EXPECT_EQ(make_preset("dgx1-v100").device(0).kind, DeviceKind::cpu);
  const Topology v100 = make_preset("dgx1-v100");
  EXPECT_EQ(v100.device(v100.device_of_rank(0)).compute_capability, 70);
  const Topology sharp = make_preset("fat-tree:nodes=8,sharp=1,leaf_ports=16");
  EXPECT_EQ(sharp.device(*sharp.find_device("leaf0")).switch_reduction, SwitchReduction::sharp);
  EXPECT_EQ(sharp.device(*sharp.find_device("spine")).switch_reduction, SwitchReduction::sharp);
  EXPECT_NE(error_of([] { make_preset("dgx-h100:nodes=2,sharp=2"); }).find("sharp"), std::string::npos);
}

}  // namespace
}  // namespace colltune::topo
