// NCCL topology XML import: the DGX H100-like dump, PCIe rate parsing, and small inline files
// for the cases a dump can contain (direct NVLinks, several hosts, missing attributes).
#include "colltune/topology/nccl_xml.hpp"

#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

using test::data_path;
using test::error_of;
using ::testing::HasSubstr;

constexpr double kGen5x16 = 32.0 * 128 / 130 * 16 / 8;
constexpr double kGen4x16 = 16.0 * 128 / 130 * 16 / 8;

int count_kind(const Topology& t, DeviceKind kind) {
  int n = 0;
  for (VertexId v = 0; v < t.num_devices(); ++v) n += t.device(v).kind == kind;
  return n;
}

VertexId device(const Topology& t, const std::string& id) {
  const auto v = t.find_device(id);
  if (!v) throw Error("test: no device " + id);
  return *v;
}

TEST(NcclXml, DgxH100Dump) {
  const Topology t = load_topology(data_path("dgx-h100-nccl-topo.xml"));
  EXPECT_EQ(t.num_ranks(), 8);
  EXPECT_EQ(t.num_hosts(), 1);
  EXPECT_EQ(count_kind(t, DeviceKind::gpu), 8);
  EXPECT_EQ(count_kind(t, DeviceKind::cpu), 2);
  EXPECT_EQ(count_kind(t, DeviceKind::nic), 10);  // 8 compute + 2 ports of the storage NIC
  EXPECT_EQ(count_kind(t, DeviceKind::nvswitch), 1);
  EXPECT_EQ(count_kind(t, DeviceKind::pcie_switch), 16);  // the NVMe leaf is left out
  EXPECT_EQ(t.device(t.device_of_rank(5)).id, "host0/gpu5");
  EXPECT_DOUBLE_EQ(t.device(t.device_of_rank(0)).reduce_gbps, 1117);  // sm 90
  EXPECT_EQ(t.device(t.device_of_rank(0)).compute_capability, 90);
  EXPECT_EQ(t.device(*t.find_device("host0/nvswitch")).switch_reduction, SwitchReduction::nvls);  // Hopper: NVLS
}

TEST(NcclXml, GpuToGpuThroughNvSwitch) {
  const Topology t = load_topology(data_path("dgx-h100-nccl-topo.xml"));
  // Counts 4 + 5 + 5 + 4 = 18 NVLink4 links x 25 GB/s into the merged NVSwitch vertex.
  for (int b = 1; b < 8; ++b) {
    const Path& p = t.route(0, b);
    EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 450);
    EXPECT_DOUBLE_EQ(p.latency_us, 0.7);
    EXPECT_EQ(test::path_devices(t, p, t.device_of_rank(0)),
              (std::vector<std::string>{"host0/gpu0", "host0/nvswitch", "host0/gpu" + std::to_string(b)}));
  }
  EXPECT_DOUBLE_EQ(t.widest_bandwidth(3, 6), 450);
}

TEST(NcclXml, GpuToNicPath) {
  const Topology t = load_topology(data_path("dgx-h100-nccl-topo.xml"));
  // GPU0 and mlx5_0 share the PCIe Gen5 switch port 0000:15:00.0: two x16 Gen5 hops.
  const Path p = t.device_route(t.device_of_rank(0), device(t, "host0/mlx5_0"));
  EXPECT_EQ(test::path_devices(t, p, t.device_of_rank(0)),
            (std::vector<std::string>{"host0/gpu0", "host0/pci0000:15:00.0", "host0/mlx5_0"}));
  EXPECT_NEAR(p.bottleneck_gbps, kGen5x16, 1e-9);
  // NIC speed 400000 Mb/s = 50 GB/s; the storage ports run at 200000 Mb/s = 25 GB/s.
  EXPECT_DOUBLE_EQ(t.device_route(device(t, "host0/mlx5_0"), device(t, "fabric")).bottleneck_gbps, 50);
  EXPECT_DOUBLE_EQ(t.device_route(device(t, "host0/mlx5_9"), device(t, "fabric")).bottleneck_gbps, 25);
  // GPU4 (second socket) to mlx5_0 (first socket): hopping over NVLink to GPU0 and down its
  // PCIe switch (1.7 us) beats the way through both CPUs (like NCCL's PXN).
  const Path far = t.device_route(t.device_of_rank(4), device(t, "host0/mlx5_0"));
  EXPECT_EQ(test::path_devices(t, far, t.device_of_rank(4)),
            (std::vector<std::string>{"host0/gpu4", "host0/nvswitch", "host0/gpu0", "host0/pci0000:15:00.0", "host0/mlx5_0"}));
  EXPECT_DOUBLE_EQ(far.latency_us, 1.7);
}

TEST(NcclXml, PcieLinkRates) {
  EXPECT_NEAR(pcie_link_gbps("16.0 GT/s PCIe", "16"), kGen4x16, 1e-9);
  EXPECT_NEAR(pcie_link_gbps("32.0 GT/s", "16"), kGen5x16, 1e-9);
  EXPECT_NEAR(pcie_link_gbps("8 GT/s", "4"), 8.0 * 128 / 130 * 4 / 8, 1e-9);
  EXPECT_NEAR(pcie_link_gbps("2.5 GT/s PCIe", "1"), 0.25, 1e-12);
  EXPECT_EQ(pcie_link_gbps("Unknown", "16"), 0);
  EXPECT_EQ(pcie_link_gbps("16.0 GT/s PCIe", "0"), 0);
  EXPECT_EQ(pcie_link_gbps("", ""), 0);
  EXPECT_THAT(error_of([] { pcie_link_gbps("3.0 GT/s", "16"); }), HasSubstr("link_speed: '3.0 GT/s' is no PCIe generation"));
  // A width that is not a PCIe width is refused, never read as x1 or the default.
  EXPECT_THAT(error_of([] { pcie_link_gbps("16.0 GT/s PCIe", "1e9"); }), HasSubstr("link_width: '1e9' is not a decimal integer"));
  EXPECT_THAT(error_of([] { pcie_link_gbps("16.0 GT/s PCIe", "abc"); }), HasSubstr("link_width: 'abc' is not a decimal integer"));
  EXPECT_THAT(error_of([] { pcie_link_gbps("16.0 GT/s PCIe", "-16"); }), HasSubstr("link_width: '-16' must not be negative"));
  EXPECT_THAT(error_of([] { pcie_link_gbps("16.0abc", "16"); }), HasSubstr("is no PCIe generation"));
}

// Two V100s joined directly by two NVLink2 links each way, under one CPU.
constexpr const char* kDirectNvlink = R"(<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel">
    <pci busid="0000:01:00.0" class="0x060400" link_speed="8.0 GT/s PCIe" link_width="16">
      <pci busid="0000:02:00.0" class="0x030200" link_speed="Unknown" link_width="16">
        <gpu dev="0" sm="70" RANK_A><nvlink target="0000:03:00.0" count="2" tclass="0x030200"/></gpu>
      </pci>
      <pci busid="0000:03:00.0" class="0x030200" link_speed="8.0 GT/s PCIe" link_width="16">
        <gpu dev="1" sm="70" RANK_B><nvlink target="0000:02:00.0" count="2" tclass="0x030200"/></gpu>
      </pci>
    </pci>
  </cpu>
</system>
)";

std::string direct(const std::string& rank_a, const std::string& rank_b) {
  std::string s = kDirectNvlink;
  s.replace(s.find("RANK_A"), 6, rank_a);
  s.replace(s.find("RANK_B"), 6, rank_b);
  return s;
}

TEST(NcclXml, DirectNvlinkAndInheritedPcieSpeed) {
  const Topology t = topology_from_nccl_xml(direct("rank=\"1\"", "rank=\"0\""), "direct.xml");
  t.validate();
  EXPECT_EQ(t.device(t.device_of_rank(1)).id, "host0/gpu0");
  EXPECT_DOUBLE_EQ(t.route(0, 1).bottleneck_gbps, 50);  // 2 x 25 GB/s, sm 70
  EXPECT_EQ(t.route(0, 1).links.size(), 1u);
  EXPECT_EQ(count_kind(t, DeviceKind::nvswitch), 0);
  // "Unknown" link speed: gpu0's PCIe link inherits its bridge's Gen3 x16.
  const Path up = t.device_route(t.device_of_rank(1), device(t, "host0/cpu0"));
  EXPECT_NEAR(up.bottleneck_gbps, 8.0 * 128 / 130 * 16 / 8, 1e-9);
}

TEST(NcclXml, RanksInDocumentOrderWhenAbsent) {
  const Topology t = topology_from_nccl_xml(direct("", ""), "norank.xml");
  EXPECT_EQ(t.device(t.device_of_rank(0)).id, "host0/gpu0");
  EXPECT_THAT(error_of([] { topology_from_nccl_xml(direct("rank=\"0\"", ""), "mixed.xml"); }),
              HasSubstr("mixed.xml: gpu@rank: 1 of 2 GPUs have a rank attribute"));
}

TEST(NcclXml, HostHashSeparatesHosts) {
  const std::string one = R"(<cpu host_hash="HASH" numaid="0"><pci busid="BUS" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="80" rank="RANK"/></pci><pci busid="NIC" class="0x020700" link_speed="16.0 GT/s PCIe" link_width="16"><nic><net name="mlx5_0" speed="200000"/></nic></pci></cpu>)";
  auto cpu = [&](const char* hash, const char* bus, const char* rank, const char* nic) {
    std::string s = one;
    s.replace(s.find("HASH"), 4, hash);
    s.replace(s.find("BUS"), 3, bus);
    s.replace(s.find("RANK"), 4, rank);
    s.replace(s.find("NIC"), 3, nic);
    return s;
  };
  const std::string xml = "<system version=\"1\">" + cpu("0xaa", "0000:07:00.0", "0", "0000:08:00.0") +
                          cpu("0xbb", "0000:07:00.0", "1", "0000:08:00.0") + "</system>";
  const Topology t = topology_from_nccl_xml(xml, "two.xml");
  t.validate();
  EXPECT_EQ(t.num_hosts(), 2);
  EXPECT_EQ(t.rank_layout(), RankLayout::uniform(2, 1));
  // gpu -> nic (Gen4 x16) -> fabric (200 Gb/s = 25 GB/s) -> nic -> gpu; GPU and NIC hang off the CPU.
  const Path& p = t.route(0, 1);
  EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 25);
  EXPECT_EQ(test::path_devices(t, p, t.device_of_rank(0)),
            (std::vector<std::string>{"host0/gpu0", "host0/cpu0", "host0/mlx5_0", "fabric", "host1/mlx5_0", "host1/cpu0",
                                      "host1/gpu0"}));
}

// The class NCCL's model gives a CPU, as the NCCL build that wrote the dump classed it
// (src/graph/topo.cc, ncclTopoAddCpu): Intel by family 6's model number; AMD by the family the
// dump holds, which builds with per-generation detection write as CPUID defines it (25 for
// Zen 3/4) and earlier builds with the extended family shifted (175), taking every AMD at 16 GB/s.
TEST(NcclXml, CpuClassAsTheWritingBuildSawIt) {
  EXPECT_EQ(nccl_cpu_of_dump("GenuineIntel", 6, 0x4F), NcclCpu::intel_bdw);
  EXPECT_EQ(nccl_cpu_of_dump("GenuineIntel", 6, 0x55), NcclCpu::intel_skl);
  EXPECT_EQ(nccl_cpu_of_dump("GenuineIntel", 6, 0x8F), NcclCpu::intel_srp);  // Sapphire Rapids (DGX H100)
  EXPECT_EQ(nccl_cpu_of_dump("GenuineIntel", 6, 0xCF), NcclCpu::intel_erp);
  EXPECT_EQ(nccl_cpu_of_dump("GenuineIntel", 15, 0xCF), NcclCpu::intel_bdw);
  EXPECT_EQ(nccl_cpu_of_dump("AuthenticAMD", 23, 49), NcclCpu::amd);        // Rome (DGX A100): the same in both
  EXPECT_EQ(nccl_cpu_of_dump("AuthenticAMD", 25, 17), NcclCpu::amd_zen34);  // Genoa, per-generation build
  EXPECT_EQ(nccl_cpu_of_dump("AuthenticAMD", 175, 17), NcclCpu::amd);       // Genoa, a release's dump
  EXPECT_EQ(nccl_cpu_of_dump("AuthenticAMD", 26, 2), NcclCpu::amd_zen5);    // Turin, per-generation build
  EXPECT_EQ(nccl_cpu_of_dump("AuthenticAMD", 191, 2), NcclCpu::amd);        // Turin, a release's dump
  EXPECT_EQ(nccl_cpu_of_dump("CentaurHauls", 7, 0x5B), std::nullopt);

  std::string xml = direct("", "");
  const auto cpu_of = [](const std::string& text) {
    const Topology t = topology_from_nccl_xml(text, "cpu.xml");
    return t.device(*t.find_device("host0/cpu0")).nccl_cpu;
  };
  EXPECT_EQ(cpu_of(xml), std::nullopt);  // no familyid/modelid: the model's default
  const std::string intel = R"(vendor="GenuineIntel")";
  xml.replace(xml.find(intel), intel.size(), R"(vendor="AuthenticAMD" familyid="25" modelid="17")");
  EXPECT_EQ(cpu_of(xml), NcclCpu::amd_zen34);
  xml.replace(xml.find(R"(familyid="25")"), 13, R"(familyid="x5")");
  EXPECT_THAT(error_of([&] { cpu_of(xml); }),
              HasSubstr("cpu.xml: system/cpu[0]@familyid: 'x5' is not a decimal integer"));
}

TEST(NcclXml, BadFilesNameTheElement) {
  auto err = [](const std::string& xml) { return error_of([&] { topology_from_nccl_xml(xml, "f.xml"); }); };
  EXPECT_THAT(err(""), HasSubstr("f.xml:"));
  EXPECT_THAT(err("<config/>"), HasSubstr("f.xml: system: no <system> element"));
  EXPECT_THAT(err("<system version=\"1\"></system>"), HasSubstr("no <cpu> elements"));
  EXPECT_THAT(err("<system><cpu numaid=\"0\"/></system>"), HasSubstr("no <gpu> elements"));
  EXPECT_THAT(err(R"(<system><cpu numaid="0"><pci busid="0000:01:00.0"><gpu dev="0"/></pci></cpu></system>)"),
              HasSubstr("f.xml: system/cpu[0]/pci[busid=0000:01:00.0]/gpu@sm: missing attribute"));
  EXPECT_THAT(err(R"(<system><cpu numaid="0"><pci busid="0000:01:00.0"><gpu dev="0" sm="nine"/></pci></cpu></system>)"),
              HasSubstr("gpu@sm: 'nine' is not a decimal integer"));
  EXPECT_THAT(err(R"(<system><cpu numaid="0"><pci busid="0000:01:00.0" link_speed="3 GT/s" link_width="16"><gpu dev="0" sm="90"/></pci></cpu></system>)"),
              HasSubstr("pci[busid=0000:01:00.0]: link_speed: '3 GT/s' is no PCIe generation"));
  EXPECT_THAT(err(R"(<system><cpu numaid="0"><pci busid="0000:01:00.0"><gpu dev="0" sm="90"><nvlink target="0000:09:00.0" count="2" tclass="0x030200"/></gpu></pci></cpu></system>)"),
              HasSubstr("gpu/nvlink[0]@target: no GPU with busid '0000:09:00.0'"));
  EXPECT_THAT(err(R"(<system><cpu numaid="0"><pci busid="0000:01:00.0"><gpu dev="0" sm="90"><nvlink target="x" count="0" tclass="0x068000"/></gpu></pci></cpu></system>)"),
              HasSubstr("nvlink[0]@count: must be positive, got 0"));
  EXPECT_THAT(err(R"(<system><cpu numaid="0"><pci busid="0000:01:00.0"><gpu dev="0" sm="90"/></pci><pci busid="0000:02:00.0"><nic><net name="mlx5_0" speed="0"/></nic></pci></cpu></system>)"),
              HasSubstr("net[0]@speed: NIC speed must be positive (Mb/s), got 0"));
  EXPECT_THAT(err(R"(<system><cpu numaid="0"><pci busid="0000:01:00.0"><gpu dev="0" sm="90" rank="4"/></pci></cpu></system>)"),
              HasSubstr("host0/gpu0@rank: rank 4 out of range: 1 GPUs, so 0..0"));
}

}  // namespace
}  // namespace colltune::topo
