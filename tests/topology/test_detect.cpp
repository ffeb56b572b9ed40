// topo detect: the nvidia-smi parsers on outputs in the exact format of DGX H100, DGX A100 and a
// PCIe box (tests/data/topology/nvidia-smi/README.md), the builder against the presets of the
// same machines, and the CPU probes of this machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/topology/detect.hpp"
#include "colltune/topology/hardware.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/presets.hpp"

namespace colltune::topo {
namespace {

const std::string kDir = std::string(COLLTUNE_TEST_DATA) + "/topology/nvidia-smi/";

HostDescription captured(const std::string& machine, int sockets, const std::string& host = "h0") {
  HostDescription d;
  d.hostname = host;
  d.sockets.assign(static_cast<std::size_t>(sockets), CpuSocket{32, "test"});
  d.cpu_source = "test";
  d.gpus = parse_nvidia_smi_gpus(read_file(kDir + machine + "-query.csv"), machine + "-query.csv");
  d.matrix = parse_nvidia_smi_topo(read_file(kDir + machine + "-topo.txt"), machine + "-topo.txt");
  d.gpu_source = "files";
  d.nic_source = "none";
  return d;
}

DetectedHost with_ranks(HostDescription d, int first, int count) {
  DetectedHost h{std::move(d), {}, {}};
  for (int r = 0; r < count; ++r) h.ranks.push_back(first + r);
  return h;
}

std::size_t count_kind(const Topology& t, DeviceKind kind) {
  std::size_t n = 0;
  for (VertexId v = 0; v < t.num_devices(); ++v) n += t.device(v).kind == kind ? 1 : 0;
  return n;
}

bool path_has(const Topology& t, const Path& p, LinkKind kind) {
  return std::any_of(p.links.begin(), p.links.end(), [&](std::size_t l) { return t.link(l).kind == kind; });
}

TEST(DetectParse, DgxH100MatrixWithEscapesNicRowsAndLegend) {
  const GpuTopoMatrix m = parse_nvidia_smi_topo(read_file(kDir + "dgx-h100-topo.txt"), "h100");
  ASSERT_EQ(m.gpus.size(), 8u);
  ASSERT_EQ(m.nics.size(), 10u);
  EXPECT_EQ(m.nics[0], "mlx5_0");  // from the NIC legend
  EXPECT_EQ(m.nics[9], "mlx5_9");
  EXPECT_EQ(m.at(0, 7).path, PathClass::nvlink);
  EXPECT_EQ(m.at(0, 7).nvlinks, 18);
  EXPECT_EQ(m.at(3, 8 + 3).path, PathClass::pix);
  EXPECT_EQ(m.at(0, 8 + 1).path, PathClass::node);
  EXPECT_EQ(m.at(0, 8 + 4).path, PathClass::sys);
  EXPECT_EQ(m.at(8 + 9, 8 + 8).path, PathClass::sys);  // NIC rows are read
  EXPECT_EQ(m.at(5, 5).path, PathClass::self);
}

TEST(DetectParse, OlderFormatWithNicNamesAsColumnsAndNoNicRows) {
  const GpuTopoMatrix m = parse_nvidia_smi_topo(read_file(kDir + "dgx-a100-topo.txt"), "a100");
  ASSERT_EQ(m.gpus.size(), 8u);
  ASSERT_EQ(m.nics.size(), 10u);
  EXPECT_EQ(m.nics[3], "mlx5_3");
  EXPECT_EQ(m.at(2, 8 + 2).path, PathClass::pxb);
  EXPECT_EQ(m.at(8 + 2, 2).path, PathClass::pxb);          // NIC row from the GPU column
  EXPECT_EQ(m.at(8 + 0, 8 + 1).path, PathClass::unknown);  // NIC to NIC: not in the output
}

TEST(DetectParse, GpuQuery) {
  const std::vector<GpuInfo> g = parse_nvidia_smi_gpus(
      "NVIDIA H100 80GB HBM3, 00000000:18:00.0, 9.0\r\nTesla P100-PCIE-16GB, 00000000:3B:00.0, [N/A]\n\n", "q");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g[0].bus_id, "00000000:18:00.0");
  EXPECT_EQ(g[0].compute_capability, 90);
  EXPECT_EQ(g[1].compute_capability, 0);  // old drivers: unknown, not an error
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_nvidia_smi_topo(text, "smi.txt");
    ADD_FAILURE() << "no error for: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("smi.txt", 0), 0u) << e.what();
  }
}

TEST(DetectParse, GarbledOutputIsOneErrorNamingIt) {
  expect_error("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "no header line");
  expect_error("", "empty");
  expect_error("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV2x\t0-3\nGPU1\tNV2\t X \t0-3\n",
               "line 2: row GPU0, column 2: 'NV2x' is not a connection");
  expect_error("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV2\t0-3\n", "no row for GPU1");
  expect_error("\tGPU0\tGPU1\nGPU0\t X\n", "line 2: row GPU0 has 1 cells, the header names 2");
  expect_error("\tGPU0\tGPU1\nGPU0\tNV1\t X\nGPU1\tNV1\t X\n", "must be on the diagonal");
  EXPECT_THROW(parse_nvidia_smi_gpus("NVIDIA A100, 8.0\n", "q"), Error);
  EXPECT_THROW(parse_nvidia_smi_gpus("NVIDIA A100, bus, 8.0\n", "q"), Error);
}

// The detected DGX H100 has the preset's NVSwitch bandwidth, and its GPU i shares a PCIe
// switch with NIC i.
TEST(DetectBuild, DgxH100LikeThePreset) {
  const Topology t = build_detected_topology({with_ranks(captured("dgx-h100", 2), 0, 8)});
  EXPECT_EQ(t.num_ranks(), 8);
  EXPECT_EQ(count_kind(t, DeviceKind::nvswitch), 1u);
  EXPECT_EQ(count_kind(t, DeviceKind::nic), 10u);
  EXPECT_EQ(count_kind(t, DeviceKind::pcie_switch), 8u);
  EXPECT_EQ(t.device(*t.find_device("h0/nvswitch")).switch_reduction, SwitchReduction::nvls);
  const Topology preset = load_topology("dgx-h100");
  EXPECT_DOUBLE_EQ(t.route(0, 5).bottleneck_gbps, preset.route(0, 5).bottleneck_gbps);
  const Path gpu_nic = t.device_route(t.device_of_rank(3), *t.find_device("h0/mlx5_3"));
  EXPECT_EQ(gpu_nic.links.size(), 2u);  // GPU -> its PCIe switch -> NIC
  EXPECT_EQ(t.device(t.device_of_rank(0)).compute_capability, 90);
  EXPECT_NE(t.description.find("detected; figures are defaults, calibrate them"), std::string::npos);
}

TEST(DetectBuild, DgxA100SwitchesOfTwoGpusAndTwoNics) {
  const Topology t = build_detected_topology({with_ranks(captured("dgx-a100", 2), 0, 8)});
  EXPECT_EQ(count_kind(t, DeviceKind::pcie_switch), 4u);
  const Topology preset = load_topology("dgx-a100");
  EXPECT_DOUBLE_EQ(t.route(0, 7).bottleneck_gbps, preset.route(0, 7).bottleneck_gbps);
  EXPECT_EQ(t.device_route(t.device_of_rank(2), *t.find_device("h0/mlx5_3")).links.size(), 2u);
  EXPECT_GT(t.device_route(t.device_of_rank(2), *t.find_device("h0/mlx5_0")).links.size(), 2u);
  EXPECT_FALSE(path_has(t, t.route(0, 7), LinkKind::sys));
}

TEST(DetectBuild, PcieBoxDirectNvlinkBridgesAndSocketCrossing) {
  const Topology t = build_detected_topology({with_ranks(captured("pcie-a40", 2), 0, 4)});
  EXPECT_EQ(count_kind(t, DeviceKind::nvswitch), 0u);
  const Path bridged = t.route(0, 1);
  ASSERT_EQ(bridged.links.size(), 1u);
  EXPECT_EQ(t.link(bridged.links[0]).kind, LinkKind::nvlink);
  EXPECT_DOUBLE_EQ(bridged.bottleneck_gbps, 4 * find_gpu("a40").nvlink.link_gbps);  // NV4 of the A40s
  EXPECT_TRUE(path_has(t, t.route(1, 2), LinkKind::sys));  // SYS: across the sockets
  EXPECT_TRUE(path_has(t, t.device_route(t.device_of_rank(0), *t.find_device("h0/mlx5_0")), LinkKind::pcie));
}

// Two hosts: one network switch joins their NICs at the rates sysfs gave.
TEST(DetectBuild, TwoHostsJoinedByTheirNics) {
  std::vector<DetectedHost> hosts;
  for (int h = 0; h < 2; ++h) {
    HostDescription d = captured("dgx-h100", 2, "node" + std::to_string(h));
    for (int n = 0; n < 8; ++n) d.nics.push_back(NicInfo{"mlx5_" + std::to_string(n), 50, -1, "InfiniBand"});
    hosts.push_back(with_ranks(d, 8 * h, 8));
  }
  const Topology t = build_detected_topology(hosts);
  EXPECT_EQ(t.num_hosts(), 2);
  EXPECT_EQ(t.transport, NetTransport::ib);
  ASSERT_TRUE(t.find_device("network"));
  EXPECT_EQ(t.device(*t.find_device("network")).host, -1);
  const Topology preset = load_topology("dgx-h100:nodes=2");
  EXPECT_DOUBLE_EQ(t.route(0, 8).bottleneck_gbps, preset.route(0, 8).bottleneck_gbps);
  EXPECT_EQ(t.host_of_rank(9), 1);
}

TEST(DetectBuild, CpuRanksFollowTheirSocketsAndHostsWithoutNicsGetOne) {
  HostDescription d;
  d.sockets.assign(2, CpuSocket{4, ""});
  d.nic_source = "none";
  std::vector<DetectedHost> hosts;
  for (int h = 0; h < 2; ++h) {
    d.hostname = "cpu" + std::to_string(h);
    DetectedHost host = with_ranks(d, 4 * h, 4);
    host.rank_sockets = {1, 1, 0, -1};
    hosts.push_back(host);
  }
  const Topology t = build_detected_topology(hosts);
  EXPECT_EQ(t.num_ranks(), 8);
  EXPECT_EQ(t.device(t.device_of_rank(4)).kind, DeviceKind::cpu);
  const Path to_socket = t.device_route(t.device_of_rank(0), *t.find_device("cpu0/cpu1"));
  ASSERT_EQ(to_socket.links.size(), 1u);
  EXPECT_EQ(t.link(to_socket.links[0]).kind, LinkKind::shm);
  EXPECT_EQ(t.transport, NetTransport::tcp);
  EXPECT_NE(t.description.find("cpu1: no NIC found"), std::string::npos) << t.description;
}

TEST(DetectHost, DescriptionSurvivesJson) {
  HostDescription d = captured("dgx-a100", 2);
  d.sockets[1] = CpuSocket{64, "AMD EPYC 7742 64-Core Processor", "AuthenticAMD", 23, 49};
  d.nics.push_back(NicInfo{"mlx5_0", 25, 1, "InfiniBand"});
  d.warnings.push_back("w");
  const HostDescription back = host_description_from_json(to_json(d), "rank 1");
  EXPECT_EQ(to_json(back), to_json(d));
  EXPECT_EQ(back.sockets[1].family, 23);
  EXPECT_THROW(host_description_from_json("{\"hostname\": 1}", "rank 1"), Error);
}

// The sockets' CPUID gives the class NCCL releases give the CPU: a DGX A100's EPYC 7742
// (family 17h) is AMD, a DGX H100's Xeon 8480C (family 6, model 0x8F) Sapphire Rapids; a
// socket whose CPUID was not probed names none (NCCL's model then takes its default).
TEST(DetectBuild, SocketsCarryNcclsCpuClass) {
  HostDescription amd = captured("dgx-a100", 2);
  for (CpuSocket& s : amd.sockets) s = CpuSocket{64, "AMD EPYC 7742", "AuthenticAMD", 23, 49};
  const Topology a = build_detected_topology({with_ranks(amd, 0, 8)});
  EXPECT_EQ(a.device(*a.find_device("h0/cpu1")).nccl_cpu, NcclCpu::amd);
  HostDescription intel = captured("dgx-h100", 2);
  for (CpuSocket& s : intel.sockets) s = CpuSocket{56, "Intel Xeon Platinum 8480C", "GenuineIntel", 6, 143};
  const Topology i = build_detected_topology({with_ranks(intel, 0, 8)});
  EXPECT_EQ(i.device(*i.find_device("h0/cpu0")).nccl_cpu, NcclCpu::intel_srp);
  const Topology unknown = build_detected_topology({with_ranks(captured("dgx-h100", 2), 0, 8)});
  EXPECT_EQ(unknown.device(*unknown.find_device("h0/cpu0")).nccl_cpu, std::nullopt);
}

// This machine: hwloc (where built with it) and sysfs agree, and the topology they give one
// rank per core passes validate() and reads back from its JSON.
TEST(DetectHost, ThisMachinesCpusGiveAValidTopology) {
  const CpuProbe probe = probe_cpus();
  const CpuProbe sysfs = probe_cpus_sysfs();
  ASSERT_FALSE(probe.sockets.empty());
  ASSERT_EQ(probe.sockets.size(), sysfs.sockets.size()) << probe.source;
  int cores = 0;
  for (std::size_t s = 0; s < probe.sockets.size(); ++s) {
    EXPECT_EQ(probe.sockets[s].cores, sysfs.sockets[s].cores) << "socket " << s;
    cores += probe.sockets[s].cores;
  }
  EXPECT_LE(cores, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(probe.source.rfind(built_with_hwloc() ? "hwloc " : "/proc/cpuinfo", 0), 0u) << probe.source;

  GpuProbe no_gpus{kDir + "empty.txt", kDir + "empty.txt", 30};  // GPUs: none listed
  const HostDescription d = detect_host(no_gpus);
  ASSERT_TRUE(d.gpus.empty());
  const Topology t = build_detected_topology({with_ranks(d, 0, cores)});
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "colltune_detect_test.json";
  write_file_atomic(file, to_json(t));
  const Topology back = load_topology(file.string());
  std::filesystem::remove(file);
  EXPECT_EQ(back.num_ranks(), cores);
  EXPECT_EQ(back.num_devices(), t.num_devices());
  EXPECT_EQ(back.description, t.description);
}

}  // namespace
}  // namespace colltune::topo
