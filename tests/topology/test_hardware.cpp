// The hardware table (hardware.hpp): every row complete and sourced, the lookups by name,
// board and compute capability, and the same GPU read from a preset, an NCCL dump and
// `topo detect` carrying the same figures.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/topology/detect.hpp"
#include "colltune/topology/hardware.hpp"
#include "colltune/topology/nccl_xml.hpp"
#include "colltune/topology/presets.hpp"

namespace colltune::topo {
namespace {

bool sourced(const std::string& url) { return url.rfind("https://", 0) == 0; }

TEST(Hardware, EveryGpuRowIsCompleteAndSourced) {
  std::set<std::string> names, boards;
  for (const GpuSpec& g : gpu_table()) {
    EXPECT_TRUE(names.insert(g.name).second) << g.name;
    EXPECT_TRUE(sourced(g.source)) << g.name;
    EXPECT_GT(g.compute_capability, 0) << g.name;
    EXPECT_GT(g.memory_gbps, 0) << g.name;
    EXPECT_EQ(g.reduce_gbps(), std::round(g.memory_gbps / 3)) << g.name;
    EXPECT_GE(g.pcie_gen, 3) << g.name;
    EXPECT_LE(g.pcie_gen, static_cast<int>(pcie_generations().size())) << g.name;
    EXPECT_GT(g.peak.fp32, 0) << g.name;
    EXPECT_GE(g.peak.fp16, g.peak.fp32) << g.name;
    EXPECT_TRUE(g.peak.tf32 == 0 || g.peak.tf32 >= g.peak.fp32) << g.name;
    EXPECT_TRUE(g.peak.bf16 == 0 || g.peak.bf16 >= g.peak.fp32) << g.name;
    EXPECT_TRUE(g.peak.fp8 == 0 || g.peak.fp8 >= g.peak.fp16) << g.name;
    EXPECT_FALSE(g.nvidia_smi_names.empty()) << g.name;
    for (const std::string& b : g.nvidia_smi_names) EXPECT_TRUE(boards.insert(b).second) << b;
    if (g.nvlink.generation == 0) {
      EXPECT_EQ(g.nvlink.links, 0) << g.name;
      continue;
    }
    const NvlinkGeneration& gen = nvlink_generations().at(static_cast<std::size_t>(g.nvlink.generation - 1));
    EXPECT_EQ(gen.generation, g.nvlink.generation);
    EXPECT_LE(g.nvlink.link_gbps, gen.link_gbps) << g.name;  // GA102's x4 links run slower
    EXPECT_LE(g.nvlink.links, gen.links_per_gpu) << g.name;
  }
}

TEST(Hardware, AmpPrecisionFollowsTheFormatsAGpuHas) {
  EXPECT_EQ(find_gpu("p100").amp_precision(), "fp32");  // no tensor cores
  EXPECT_EQ(find_gpu("v100").amp_precision(), "fp16");
  EXPECT_EQ(find_gpu("rtx2080ti").amp_precision(), "fp16");
  EXPECT_EQ(find_gpu("a100").amp_precision(), "bf16");
  EXPECT_EQ(find_gpu("h200").amp_precision(), "bf16");
}

TEST(Hardware, MemoryVariantsKeepTheirChipsFigures) {
  EXPECT_EQ(find_gpu("a100-40gb").memory_gbps, 1555);
  EXPECT_EQ(find_gpu("a100-40gb").peak.bf16, find_gpu("a100").peak.bf16);
  EXPECT_EQ(find_gpu("h200").memory_gbps, 4800);
  EXPECT_EQ(find_gpu("h200").nvlink.gbps(), find_gpu("h100").nvlink.gbps());
  EXPECT_EQ(find_gpu("h200").source, "https://www.nvidia.com/en-us/data-center/h200/");
}

TEST(Hardware, TheTableIsInComputeCapabilityOrder) {
  int last = 0;
  for (const GpuSpec& g : gpu_table()) {
    EXPECT_GE(g.compute_capability, last) << g.name;
    last = g.compute_capability;
  }
}

// The NVLink efficiencies NCCL's maintainers state (the step model's default where one exists):
// each with its source, a fraction, and only for GPUs that have NVLink.
TEST(Hardware, StatedNvlinkEfficienciesAreSourced) {
  std::vector<std::string> stated;
  for (const GpuSpec& g : gpu_table())
    if (const auto e = stated_nvlink_efficiency(g)) {
      stated.push_back(g.name);
      EXPECT_TRUE(sourced(std::string(e->source))) << g.name;
      EXPECT_GT(e->fraction, 0) << g.name;
      EXPECT_LE(e->fraction, 1) << g.name;
      EXPECT_GT(g.nvlink.links, 0) << g.name;
    }
  EXPECT_EQ(stated, (std::vector<std::string>{"a100", "a100-40gb", "h100", "h200"}));
}

TEST(Hardware, LinkNicAndCpuRowsAreSourced) {
  for (const NvlinkGeneration& g : nvlink_generations()) EXPECT_TRUE(sourced(g.source)) << g.generation;
  for (const PcieGeneration& g : pcie_generations()) EXPECT_TRUE(sourced(g.source)) << g.generation;
  for (const NicSpec& n : nic_table()) EXPECT_TRUE(sourced(n.source)) << n.name;
  for (const CpuSpec& c : cpu_table()) {
    EXPECT_TRUE(sourced(c.source)) << c.name;
    EXPECT_EQ(c.reduce_gbps(), std::round(c.memory_gbps / 3)) << c.name;
  }
  EXPECT_DOUBLE_EQ(find_nic("ndr").gbps(), 50);
  EXPECT_THROW(find_nic("qdr"), Error);
  EXPECT_THROW(find_cpu("m1"), Error);
}

TEST(Hardware, PcieRatesPerGenerationAndWidth) {
  EXPECT_DOUBLE_EQ(pcie_gbps(3, 16), 8 * 128.0 / 130.0 * 16 / 8.0);
  EXPECT_NEAR(pcie_gbps(4, 16), 31.51, 0.01);
  EXPECT_NEAR(pcie_gbps(5, 16), 63.02, 0.01);
  EXPECT_DOUBLE_EQ(pcie_gbps(2, 8), 4.0);
  EXPECT_THROW(pcie_gbps(7, 16), Error);
  EXPECT_THROW(pcie_gbps(0, 16), Error);
}

TEST(Hardware, ComputeCapabilityMeansTheFirstRowOrTheGenerationBefore) {
  EXPECT_EQ(gpu_of_compute_capability(90).name, "h100");
  EXPECT_EQ(gpu_of_compute_capability(80).name, "a100");
  EXPECT_EQ(gpu_of_compute_capability(86).name, "a40");
  EXPECT_EQ(gpu_of_compute_capability(87).name, "a40");  // Orin: the generation before it
  EXPECT_EQ(gpu_of_compute_capability(75).name, "rtx2080ti");
  EXPECT_EQ(gpu_of_compute_capability(100).name, "b200");
  EXPECT_EQ(gpu_of_compute_capability(120).name, "b200");
  EXPECT_EQ(gpu_of_compute_capability(52).name, "p100");  // older than the table: its oldest row
  // Ada has no NVLink; a hand-written topology that links it counts GA102's rate.
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(89), 14.0625);
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(90), 25);
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(100), 50);
  EXPECT_EQ(max_nvlinks_per_gpu(), 18);
}

TEST(Hardware, BoardNamesAsNvidiaSmiPrintsThem) {
  ASSERT_NE(gpu_of_board("NVIDIA H200"), nullptr);
  EXPECT_EQ(gpu_of_board("NVIDIA H200")->name, "h200");
  EXPECT_EQ(gpu_of_board("GeForce RTX 2080 Ti")->name, "rtx2080ti");
  EXPECT_EQ(gpu_of_board("NVIDIA GeForce RTX 2080 Ti")->name, "rtx2080ti");
  EXPECT_EQ(gpu_of_board("NVIDIA A100-SXM4-40GB")->name, "a100-40gb");
  EXPECT_EQ(gpu_of_board("NVIDIA GH200 480GB"), nullptr);
}

// One GPU node of NCCL's XML with compute capability `sm`.
Topology xml_gpu(int sm) {
  const std::string xml = "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" link_speed=\"32.0 GT/s PCIe\""
                          " link_width=\"16\"><gpu dev=\"0\" sm=\"" + std::to_string(sm) +
                          "\" rank=\"0\"/></pci></cpu></system>";
  return topology_from_nccl_xml(xml, "test.xml");
}

// One host of `board` GPUs (compute capability `cc`) as `topo detect` describes it.
Topology detected(const std::string& board, int cc) {
  HostDescription d;
  d.hostname = "h0";
  d.sockets = {CpuSocket{32, "test"}};
  d.gpus = {GpuInfo{board, "00000000:01:00.0", cc}};
  d.matrix.gpus = {"GPU0"};
  d.matrix.cells = {{PathCell{PathClass::self, 0}}};
  return build_detected_topology({DetectedHost{d, {0}, {}}});
}

double gpu_reduce(const Topology& t) { return t.device(t.device_of_rank(0)).reduce_gbps; }

// The disagreement this table ended: a preset with gpu=h200 reduced at 1,600 GB/s and an sm90
// GPU that `topo detect` found at 1,117; B200 existed only for NCCL dumps.
TEST(Hardware, OneGpuReadThreeWaysHasOneFigure) {
  EXPECT_EQ(gpu_reduce(load_topology("fat-tree:nodes=1,gpu=h200")), 1600);
  EXPECT_EQ(gpu_reduce(detected("NVIDIA H200", 90)), 1600);
  EXPECT_EQ(detected("NVIDIA H200", 90).gpu, "h200");
  EXPECT_EQ(gpu_reduce(xml_gpu(90)), gpu_reduce(load_topology("dgx-h100")));  // no board name: sm90 is an H100
  for (const Topology& b200 : {load_topology("fat-tree:nodes=1,gpu=b200"), xml_gpu(100), detected("NVIDIA B200", 100)}) {
    EXPECT_EQ(gpu_reduce(b200), find_gpu("b200").reduce_gbps());
    EXPECT_EQ(gpu_of(b200).name, "b200");
  }
  EXPECT_EQ(detected("NVIDIA GH200 480GB", 90).gpu, "");  // a board the table lacks: by compute capability
  EXPECT_EQ(gpu_of(detected("NVIDIA GH200 480GB", 90)).name, "h100");
}

}  // namespace
}  // namespace colltune::topo
