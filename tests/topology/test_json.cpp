// The JSON format: hand-computed routes on a small file, and load -> save -> load on every
// preset, the NCCL XML import and the examples.
#include "colltune/topology/json_io.hpp"

#include <filesystem>

#include "colltune/common/atomic_file.hpp"
#include "colltune/topology/nccl_xml.hpp"
#include "colltune/topology/presets.hpp"
#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

using test::data_path;
using test::error_of;
using ::testing::HasSubstr;

void expect_round_trip(const Topology& t) {
  const std::string text = to_json(t);
  const Topology again = topology_from_json(text, "first");
  test::expect_same_graph(t, again);
  EXPECT_EQ(to_json(again), text);
  again.validate();
}

TEST(TopologyJson, SmallFileRoutesByHand) {
  const Topology t = load_topology(data_path("small.json"));
  EXPECT_EQ(t.name, "small");
  EXPECT_EQ(t.num_ranks(), 4);
  EXPECT_EQ(t.num_links(), 16u);  // 7 duplex entries + 2 one-way links
  // h0/gpu0 -> h0/nic0 (0.5) -> sw (1) -> h1/nic0 (1) -> h1/gpu0 (0.5)
  const Path& there = t.route(0, 2);
  EXPECT_DOUBLE_EQ(there.latency_us, 3.0);
  EXPECT_DOUBLE_EQ(there.bottleneck_gbps, 12.5);
  EXPECT_EQ(test::path_devices(t, there, t.device_of_rank(0)),
            (std::vector<std::string>{"h0/gpu0", "h0/nic0", "sw", "h1/nic0", "h1/gpu0"}));
  // The way back uses the slower one-way link h1/nic0 -> sw (2 us, 10 GB/s).
  const Path& back = t.route(2, 0);
  EXPECT_DOUBLE_EQ(back.latency_us, 4.0);
  EXPECT_DOUBLE_EQ(back.bottleneck_gbps, 10);
  EXPECT_DOUBLE_EQ(t.route(0, 1).bottleneck_gbps, 100);
}

TEST(TopologyJson, RoundTripEveryPreset) {
  for (const PresetInfo& info : preset_catalog()) {
    SCOPED_TRACE(info.name);
    expect_round_trip(load_topology(info.name));
  }
  for (const char* spec : {"dgx-h100:nodes=3", "fat-tree:nodes=8,gpus=4,nics=2,leaf_ports=4,oversub=3", "torus:dims=3x3x2,per_host=3",
                           "flat:ranks=6,alpha=3.3,bw=7.1,nodes=2", "dgx1-v100:nodes=2", "pcie-box:gpus=3,nics=1,nodes=2"}) {
    SCOPED_TRACE(spec);
    expect_round_trip(load_topology(spec));
  }
}

TEST(TopologyJson, RoundTripImportsAndExamples) {
  expect_round_trip(load_topology(data_path("dgx-h100-nccl-topo.xml")));
  expect_round_trip(load_topology(data_path("small.json")));
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(COLLTUNE_EXAMPLES) + "/topologies")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    expect_round_trip(load_topology(entry.path().string()));
    ++examples;
  }
  EXPECT_GE(examples, 2);
}

TEST(TopologyJson, OneWayLinksStayOneWay) {
  const Topology t = load_topology(data_path("small.json"));
  const std::string text = to_json(t);
  EXPECT_THAT(text, HasSubstr("\"duplex\": true"));
  const Topology again = topology_from_json(text, "x");
  EXPECT_DOUBLE_EQ(again.route(2, 0).bottleneck_gbps, 10);
}

TEST(TopologyJson, FileWithoutExtensionIsSniffed) {
  const auto dir = std::filesystem::temp_directory_path() / ("colltune-topo-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  write_file_atomic(dir / "machine", to_json(load_topology("flat:ranks=3")));
  write_file_atomic(dir / "dump", read_file(data_path("dgx-h100-nccl-topo.xml")));
  EXPECT_EQ(load_topology((dir / "machine").string()).num_ranks(), 3);
  EXPECT_EQ(load_topology((dir / "dump").string()).num_ranks(), 8);
  std::filesystem::remove_all(dir);
}

TEST(TopologyJson, CommentsAllowedUnknownKeysNot) {
  const std::string ok = R"({"format":"colltune-topology","version":1,"comment":"hi","hosts":["h"],
    "devices":[{"id":"g","kind":"gpu","host":"h","comment":"x"}],"links":[],"ranks":[{"rank":0,"device":"g"}]})";
  EXPECT_EQ(topology_from_json(ok, "ok.json").num_ranks(), 1);
  std::string bad = ok;
  bad.replace(bad.find("\"comment\":\"x\""), 13, "\"colour\":\"red\"");
  EXPECT_THAT(error_of([&] { topology_from_json(bad, "bad.json"); }),
              HasSubstr("bad.json: devices[0].colour: unknown key (valid: id, kind, host, reduce_gbps, "
                        "compute_capability, nccl_cpu, switch_reduction)"));
}

// compute_capability belongs to GPUs, nvls to NVSwitches, sharp to network switches; names are
// checked; version 1 files (without these keys) still load.
TEST(TopologyJson, DeviceCapabilities) {
  const std::string base = R"({"format": "colltune-topology", "version": 2, "hosts": ["h"],
    "devices": [{"id": "g0", "kind": "gpu", "host": "h", "compute_capability": 90},
                {"id": "g1", "kind": "gpu", "host": "h"},
                {"id": "sw", "kind": "nvswitch", "host": "h", "switch_reduction": "REDUCTION"}],
    "links": [{"from": "g0", "to": "sw", "kind": "nvlink", "bandwidth_gbps": 450, "latency_us": 0.35, "duplex": true},
              {"from": "g1", "to": "sw", "kind": "nvlink", "bandwidth_gbps": 450, "latency_us": 0.35, "duplex": true}],
    "ranks": [{"rank": 0, "device": "g0"}, {"rank": 1, "device": "g1"}]})";
  auto with = [&](const std::string& reduction) {
    std::string s = base;
    s.replace(s.find("REDUCTION"), 9, reduction);
    return s;
  };
  const Topology t = topology_from_json(with("nvls"), "t.json");
  EXPECT_EQ(t.device(t.device_of_rank(0)).compute_capability, 90);
  EXPECT_EQ(t.device(*t.find_device("sw")).switch_reduction, SwitchReduction::nvls);
  EXPECT_THAT(error_of([&] { topology_from_json(with("sharp"), "t.json").validate(); }),
              testing::HasSubstr("switch_reduction: device 'sw' is a nvswitch and cannot do sharp"));
  EXPECT_THAT(error_of([&] { topology_from_json(with("magic"), "t.json"); }),
              testing::HasSubstr("t.json: devices[2].switch_reduction: unknown switch reduction 'magic'"));
  std::string cc_on_switch = with("none");
  cc_on_switch.replace(cc_on_switch.find("\"kind\": \"nvswitch\""), 18, "\"kind\": \"nvswitch\", \"compute_capability\": 90");
  EXPECT_THAT(error_of([&] { topology_from_json(cc_on_switch, "t.json").validate(); }),
              testing::HasSubstr("compute_capability: device 'sw' is a nvswitch, not a gpu"));
  std::string v1 = with("none");
  v1.replace(v1.find("\"version\": 2"), 12, "\"version\": 1");
  EXPECT_EQ(topology_from_json(v1, "t.json").num_ranks(), 2);
}

// A CPU names the class NCCL's model gives it; the class is kept through export, belongs to CPUs
// only, and an unknown name is an error listing the valid ones.
TEST(TopologyJson, NcclCpuClass) {
  const std::string base = R"({"format": "colltune-topology", "version": 2, "hosts": ["h"],
    "devices": [{"id": "c0", "kind": "cpu", "host": "h", "nccl_cpu": "CLASS"},
                {"id": "g0", "kind": "gpu", "host": "h", "compute_capability": 90}],
    "links": [{"from": "g0", "to": "c0", "kind": "pcie", "bandwidth_gbps": 63, "latency_us": 0.5, "duplex": true}],
    "ranks": [{"rank": 0, "device": "g0"}]})";
  auto with = [&](const std::string& cls) {
    std::string s = base;
    s.replace(s.find("CLASS"), 5, cls);
    return s;
  };
  const Topology t = topology_from_json(with("amd_zen34"), "t.json");
  t.validate();
  EXPECT_EQ(t.device(*t.find_device("c0")).nccl_cpu, NcclCpu::amd_zen34);
  EXPECT_FALSE(t.device(*t.find_device("g0")).nccl_cpu.has_value());
  const Topology back = topology_from_json(to_json(t), "back.json");
  EXPECT_EQ(back.device(*back.find_device("c0")).nccl_cpu, NcclCpu::amd_zen34);
  EXPECT_THAT(error_of([&] { topology_from_json(with("zen9"), "t.json"); }),
              HasSubstr("t.json: devices[0].nccl_cpu: unknown CPU class for NCCL's model 'zen9' (valid: intel_bdw, "
                        "intel_skl, intel_srp, intel_erp, amd, amd_zen34, amd_zen5)"));
  std::string on_gpu = with("amd");
  const std::string cc = "\"compute_capability\": 90";
  on_gpu.replace(on_gpu.find(cc), cc.size(), cc + ", \"nccl_cpu\": \"amd\"");
  EXPECT_THAT(error_of([&] { topology_from_json(on_gpu, "t.json").validate(); }),
              HasSubstr("nccl_cpu: device 'g0' is a gpu, not a cpu"));
}

}  // namespace
}  // namespace colltune::topo
