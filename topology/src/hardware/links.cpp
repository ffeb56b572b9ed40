// The link, NIC and CPU rows of the hardware table (hardware.hpp).
#include <cmath>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::topo {
namespace {

constexpr const char* kNvlinkPage = "https://www.nvidia.com/en-us/data-center/nvlink/";
constexpr const char* kPcieSpecs = "https://pcisig.com/specifications";
constexpr const char* kIbRoadmap = "https://www.infinibandta.org/infiniband-roadmap/";

template <class Row>
const Row& find_row(const std::vector<Row>& table, std::string_view name, const char* what) {
  for (const Row& r : table)
    if (r.name == name) return r;
  std::string known;
  for (const Row& r : table) known += (known.empty() ? "" : ", ") + r.name;
  throw Error("unknown " + std::string(what) + " '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace

// Per GPU, all links, both directions, as NVIDIA states it: NVLink1 160 GB/s over 4 links (P100
// data sheet), NVLink2 300 GB/s over 6, NVLink3 600 GB/s over 12, NVLink4 900 GB/s over 18,
// NVLink5 1.8 TB/s over 18 (NVLink page): one link, one direction, is total / links / 2.
const std::vector<NvlinkGeneration>& nvlink_generations() {
  static const std::vector<NvlinkGeneration> table{
      {.generation = 1, .link_gbps = 20, .links_per_gpu = 4, .first_gpu = "p100",
       .source = "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf"},
      {.generation = 2, .link_gbps = 25, .links_per_gpu = 6, .first_gpu = "v100", .source = kNvlinkPage},
      {.generation = 3, .link_gbps = 25, .links_per_gpu = 12, .first_gpu = "a100", .source = kNvlinkPage},
      {.generation = 4, .link_gbps = 25, .links_per_gpu = 18, .first_gpu = "h100", .source = kNvlinkPage},
      {.generation = 5, .link_gbps = 50, .links_per_gpu = 18, .first_gpu = "b200", .source = kNvlinkPage},
  };
  return table;
}

// Lane rates 2.5/5/8/16/32/64 GT/s for Gen1..Gen6; 8b/10b encoding for Gen1-2, 128b/130b for
// Gen3-5, 242/256 FLIT for Gen6.
const std::vector<PcieGeneration>& pcie_generations() {
  static const std::vector<PcieGeneration> table{
      {.generation = 1, .gts = 2.5, .encoding = 0.8, .source = kPcieSpecs},
      {.generation = 2, .gts = 5, .encoding = 0.8, .source = kPcieSpecs},
      {.generation = 3, .gts = 8, .encoding = 128.0 / 130.0, .source = kPcieSpecs},
      {.generation = 4, .gts = 16, .encoding = 128.0 / 130.0, .source = kPcieSpecs},
      {.generation = 5, .gts = 32, .encoding = 128.0 / 130.0, .source = kPcieSpecs},
      {.generation = 6, .gts = 64, .encoding = 242.0 / 256.0, .source = kPcieSpecs},
  };
  return table;
}

double pcie_gbps(int generation, int width) {
  const auto& table = pcie_generations();
  if (generation < 1 || generation > static_cast<int>(table.size()))
    throw Error("PCIe generation " + std::to_string(generation) + ": expected 1 to " + std::to_string(table.size()));
  const PcieGeneration& g = table[static_cast<std::size_t>(generation - 1)];
  return g.gts * g.encoding * width / 8.0;
}

// 4x ports (the width every ConnectX port and switch port here has); Ethernet at the same
// rates (100/200/400/800GbE) counts the same.
const std::vector<NicSpec>& nic_table() {
  static const std::vector<NicSpec> table{
      {.name = "edr", .description = "InfiniBand EDR 4x / 100GbE (ConnectX-4, ConnectX-5)", .gbit = 100,
       .source = kIbRoadmap},
      {.name = "hdr", .description = "InfiniBand HDR 4x / 200GbE (ConnectX-6)", .gbit = 200, .source = kIbRoadmap},
      {.name = "ndr", .description = "InfiniBand NDR 4x / 400GbE (ConnectX-7)", .gbit = 400, .source = kIbRoadmap},
      {.name = "xdr", .description = "InfiniBand XDR 4x / 800GbE (ConnectX-8)", .gbit = 800, .source = kIbRoadmap},
  };
  return table;
}

const NicSpec& find_nic(std::string_view name) { return find_row(nic_table(), name, "NIC"); }

// Memory: channels x MT/s x 8 bytes. Socket links, one direction, all links together.
const std::vector<CpuSpec>& cpu_table() {
  static const std::vector<CpuSpec> table{
      {.name = "xeon-8480c",
       .description = "Intel Xeon Platinum 8480C (DGX H100): 8 x DDR5-4800; 4 UPI 2.0 links x 16 GT/s x 2 B",
       .memory_gbps = 307.2,
       .socket_link_gbps = 128,
       .nccl_cpu = NcclCpu::intel_srp,  // family 6, model 0x8F
       .source = "https://www.intel.com/content/www/us/en/products/sku/231746/"
                 "intel-xeon-platinum-8480-processor-105m-cache-2-00-ghz/specifications.html"},
      {.name = "epyc-7742",
       .description = "AMD EPYC 7742 (DGX A100): 8 x DDR4-3200; xGMI, 4 x16 links x 16 GT/s = 4 x 32 GB/s",
       .memory_gbps = 204.8,
       .socket_link_gbps = 128,
       .nccl_cpu = NcclCpu::amd,  // Zen 2 (Rome), family 17h
       .source = "https://www.amd.com/en/products/cpu/amd-epyc-7742"},
      {.name = "xeon-e5-2698v4",
       .description = "Intel Xeon E5-2698 v4 (DGX-1): 4 x DDR4-2400; 2 QPI links x 9.6 GT/s x 2 B",
       .memory_gbps = 76.8,
       .socket_link_gbps = 38.4,
       .nccl_cpu = NcclCpu::intel_bdw,  // Broadwell, model 0x4F
       .source = "https://ark.intel.com/content/www/us/en/ark/products/91753/"
                 "intel-xeon-processor-e52698-v4-50m-cache-2-20-ghz.html"},
  };
  return table;
}

const CpuSpec& find_cpu(std::string_view name) { return find_row(cpu_table(), name, "CPU"); }

std::string known_cpus() {
  std::string known;
  for (const CpuSpec& c : cpu_table()) known += (known.empty() ? "" : ", ") + c.name;
  return known;
}

double CpuSpec::reduce_gbps() const { return std::round(reduce_gbps_of_memory(memory_gbps)); }

}  // namespace colltune::topo
