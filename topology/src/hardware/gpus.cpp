// The GPU rows of the hardware table (hardware.hpp). Peak figures are the data sheets' dense
// numbers: where a sheet gives "with sparsity" figures (A100 and later) they are halved here.
// A row's compute capability is the CUDA one (CUDA C++ Programming Guide, "Compute
// Capabilities": https://docs.nvidia.com/cuda/cuda-c-programming-guide/#compute-capabilities).
#include <algorithm>
#include <cmath>

#include "colltune/common/error.hpp"
#include "colltune/topology/hardware.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::topo {
namespace {

// A board of `base`'s chip with other memory: the same compute and links.
GpuSpec memory_variant(GpuSpec base, std::string name, std::string board, std::string smi_name, double memory_gbps,
                       std::string source) {
  base.name = std::move(name);
  base.board = std::move(board);
  base.nvidia_smi_names = {std::move(smi_name)};
  base.memory_gbps = memory_gbps;
  base.source = std::move(source);
  return base;
}

std::vector<GpuSpec>::iterator row_named(std::vector<GpuSpec>& table, std::string_view name) {
  return std::find_if(table.begin(), table.end(), [name](const GpuSpec& g) { return g.name == name; });
}

// Inserts `row` after the row named `after`.
void insert_after(std::vector<GpuSpec>& table, std::string_view after, GpuSpec row) {
  table.insert(row_named(table, after) + 1, std::move(row));
}

// The data sheets and white papers the rows come from.
constexpr const char* kPascalSheet = "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf";
constexpr const char* kVoltaSheet =
    "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf";
constexpr const char* kTuringPaper =
    "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/"
    "NVIDIA-Turing-Architecture-Whitepaper.pdf";
constexpr const char* kA100Sheet =
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf";
constexpr const char* kA40Sheet =
    "https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf";
constexpr const char* kGa102Paper =
    "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf";
constexpr const char* kL40sSheet = "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413";
constexpr const char* kAdaPaper =
    "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf";
constexpr const char* kH100Sheet = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
constexpr const char* kH200Page = "https://www.nvidia.com/en-us/data-center/h200/";
constexpr const char* kHgxPage = "https://www.nvidia.com/en-us/data-center/hgx/";

std::vector<GpuSpec> make_gpu_table() {
  std::vector<GpuSpec> table{
      // Pascal: NVLink1, no tensor cores and no TF32; fp16 runs at twice the fp32 rate.
      {.name = "p100", .board = "Tesla P100 SXM2 16GB", .nvidia_smi_names = {"Tesla P100-SXM2-16GB"},
       .compute_capability = 60, .memory_gbps = 732, .nvlink = {1, 4, 20}, .pcie_gen = 3,
       .peak = {.fp32 = 10.6, .fp16 = 21.2}, .source = kPascalSheet},
      // Volta: fp16 tensor cores, no TF32, no bf16.
      {.name = "v100", .board = "Tesla V100 SXM2", .nvidia_smi_names = {"Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB"},
       .compute_capability = 70, .memory_gbps = 900, .nvlink = {2, 6, 25}, .pcie_gen = 3,
       .peak = {.fp32 = 15.7, .fp16 = 125}, .source = kVoltaSheet},
      // Turing, reference clocks: two x8 NVLink2 links ("100 GB/s" bidirectional), no bf16.
      {.name = "rtx2080ti", .board = "GeForce RTX 2080 Ti",
       .nvidia_smi_names = {"NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"}, .compute_capability = 75,
       .memory_gbps = 616, .nvlink = {2, 2, 25}, .pcie_gen = 3, .peak = {.fp32 = 13.4, .fp16 = 53.8},
       .source = kTuringPaper},
      // Ampere: TF32 and bf16 tensor cores, NVLink3 (12 links, "600 GB/s").
      {.name = "a100", .board = "A100 SXM4 80GB", .nvidia_smi_names = {"NVIDIA A100-SXM4-80GB"},
       .compute_capability = 80, .memory_gbps = 2039, .nvlink = {3, 12, 25}, .pcie_gen = 4,
       .peak = {.fp32 = 19.5, .tf32 = 156, .fp16 = 312, .bf16 = 312}, .source = kA100Sheet},
      // GA102 boards: four x4 NVLink3 links of 14.0625 GB/s ("112.5 GB/s" bidirectional).
      {.name = "a40", .board = "A40 48GB", .nvidia_smi_names = {"NVIDIA A40"}, .compute_capability = 86,
       .memory_gbps = 696, .nvlink = {3, 4, 14.0625}, .pcie_gen = 4,
       .peak = {.fp32 = 37.4, .tf32 = 74.8, .fp16 = 149.7, .bf16 = 149.7}, .source = kA40Sheet},
      {.name = "a10", .board = "A10 24GB", .nvidia_smi_names = {"NVIDIA A10"}, .compute_capability = 86,
       .memory_gbps = 600, .nvlink = {}, .pcie_gen = 4, .peak = {.fp32 = 31.2, .tf32 = 62.5, .fp16 = 125, .bf16 = 125},
       .source = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/datasheet-new/nvidia-a10-datasheet.pdf"},
      {.name = "rtx3090", .board = "GeForce RTX 3090", .nvidia_smi_names = {"NVIDIA GeForce RTX 3090"},
       .compute_capability = 86, .memory_gbps = 936, .nvlink = {3, 4, 14.0625}, .pcie_gen = 4,
       .peak = {.fp32 = 35.6, .tf32 = 35.6, .fp16 = 71, .bf16 = 71}, .source = kGa102Paper},
      // Ada: fp8 tensor cores, no NVLink.
      {.name = "l40s", .board = "L40S PCIe 48GB", .nvidia_smi_names = {"NVIDIA L40S"}, .compute_capability = 89,
       .memory_gbps = 864, .nvlink = {}, .pcie_gen = 4,
       .peak = {.fp32 = 91.6, .tf32 = 183, .fp16 = 362.05, .bf16 = 362.05, .fp8 = 733}, .source = kL40sSheet},
      {.name = "rtx4090", .board = "GeForce RTX 4090", .nvidia_smi_names = {"NVIDIA GeForce RTX 4090"},
       .compute_capability = 89, .memory_gbps = 1008, .nvlink = {}, .pcie_gen = 4,
       .peak = {.fp32 = 82.6, .tf32 = 82.6, .fp16 = 165.2, .bf16 = 165.2, .fp8 = 330.3}, .source = kAdaPaper},
      // Hopper: NVLink4 (18 links, "900 GB/s"; the PCIe card's bridges: 12, "600 GB/s").
      {.name = "h100", .board = "H100 SXM5 80GB", .nvidia_smi_names = {"NVIDIA H100 80GB HBM3"},
       .compute_capability = 90, .memory_gbps = 3350, .nvlink = {4, 18, 25}, .pcie_gen = 5,
       .peak = {.fp32 = 67, .tf32 = 494.7, .fp16 = 989.4, .bf16 = 989.4, .fp8 = 1978.9}, .source = kH100Sheet},
      {.name = "h100-pcie", .board = "H100 PCIe 80GB", .nvidia_smi_names = {"NVIDIA H100 PCIe"},
       .compute_capability = 90, .memory_gbps = 2000, .nvlink = {4, 12, 25}, .pcie_gen = 5,
       .peak = {.fp32 = 51, .tf32 = 378, .fp16 = 756.5, .bf16 = 756.5, .fp8 = 1513}, .source = kH100Sheet},
      // Blackwell (HGX B200, per GPU): NVLink5 (18 links, "1.8 TB/s"), host PCIe Gen5.
      {.name = "b200", .board = "B200 (HGX B200) 180GB", .nvidia_smi_names = {"NVIDIA B200"},
       .compute_capability = 100, .memory_gbps = 7700, .nvlink = {5, 18, 50}, .pcie_gen = 5,
       .peak = {.fp32 = 75, .tf32 = 1100, .fp16 = 2250, .bf16 = 2250, .fp8 = 4500}, .source = kHgxPage},
  };
  // A100 SXM4 40GB: 1,555 GB/s of HBM2; the 80GB row comes first (sm80 means it).
  insert_after(table, "a100",
               memory_variant(*row_named(table, "a100"), "a100-40gb", "A100 SXM4 40GB", "NVIDIA A100-SXM4-40GB", 1555,
                              kA100Sheet));
  // H200 SXM: the H100 SXM's GH100 with 141 GB of HBM3e at 4.8 TB/s.
  insert_after(table, "h100-pcie",
               memory_variant(*row_named(table, "h100"), "h200", "H200 SXM 141GB", "NVIDIA H200", 4800, kH200Page));
  return table;
}

std::string_view without_prefix(std::string_view board) {
  constexpr std::string_view kVendor = "NVIDIA ";
  return board.substr(0, kVendor.size()) == kVendor ? board.substr(kVendor.size()) : board;
}

}  // namespace

double GpuSpec::reduce_gbps() const { return std::round(reduce_gbps_of_memory(memory_gbps)); }

std::string GpuSpec::amp_precision() const {
  if (peak.bf16 > 0) return "bf16";
  return peak.fp16 > 2 * peak.fp32 ? "fp16" : "fp32";
}

const std::vector<GpuSpec>& gpu_table() {
  static const std::vector<GpuSpec> table = make_gpu_table();
  return table;
}

std::string known_gpus() {
  std::string out;
  for (const GpuSpec& g : gpu_table()) out += (out.empty() ? "" : ", ") + g.name;
  return out;
}

const GpuSpec& find_gpu(std::string_view name, std::string_view what) {
  for (const GpuSpec& g : gpu_table())
    if (g.name == name) return g;
  const std::string prefix = what.empty() ? std::string() : std::string(what) + ": ";
  throw Error(prefix + "unknown GPU '" + std::string(name) + "' (known: " + known_gpus() + ")");
}

const GpuSpec& gpu_of_compute_capability(int compute_capability) {
  const std::vector<GpuSpec>& table = gpu_table();
  const GpuSpec* best = nullptr;  // the first row of the highest capability <= the one asked
  for (const GpuSpec& g : table)
    if (g.compute_capability <= compute_capability && (!best || g.compute_capability > best->compute_capability))
      best = &g;
  return best ? *best : table.front();
}

const GpuSpec* gpu_of_board(std::string_view board) {
  for (const GpuSpec& g : gpu_table())
    for (const std::string& n : g.nvidia_smi_names)
      if (without_prefix(n) == without_prefix(board)) return &g;
  return nullptr;
}

const GpuSpec& gpu_of(const Topology& topology) {
  if (!topology.gpu.empty()) return find_gpu(topology.gpu, "topology '" + topology.name + "'");
  const int cc = topology.num_ranks() > 0 ? topology.device(topology.device_of_rank(0)).compute_capability : 0;
  return cc > 0 ? gpu_of_compute_capability(cc) : find_gpu("h100");
}

std::optional<StatedNvlinkEfficiency> stated_nvlink_efficiency(const GpuSpec& gpu) {
  // On A100 each NVLink's 25 GB/s line rate "converts to ~20GB/s effective bandwidth with a 128B
  // payload size" (SMs are limited to 128-byte payloads), 240 GB/s over 12 links, "but some
  // other bottlenecks on the GPUs limits it to ~230GB/s". On H100: "With the protocol overhead
  // (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s" of 450.
  static constexpr std::string_view kA100 = "https://github.com/NVIDIA/nccl-tests/issues/149";
  static constexpr std::string_view kH100 = "https://github.com/NVIDIA/nccl-tests/issues/212";
  if (gpu.name == "a100" || gpu.name == "a100-40gb") return StatedNvlinkEfficiency{230.0 / 300.0, kA100};
  if (gpu.name == "h100" || gpu.name == "h200") return StatedNvlinkEfficiency{370.0 / 450.0, kH100};
  return std::nullopt;
}

double nvlink_link_gbps(int compute_capability) {
  const GpuSpec& own = gpu_of_compute_capability(compute_capability);
  if (own.nvlink.links > 0) return own.nvlink.link_gbps;
  const GpuSpec* best = nullptr;
  for (const GpuSpec& g : gpu_table())
    if (g.nvlink.links > 0 && g.compute_capability < own.compute_capability &&
        (!best || g.compute_capability > best->compute_capability))
      best = &g;
  return best ? best->nvlink.link_gbps : gpu_table().front().nvlink.link_gbps;
}

int max_nvlinks_per_gpu() {
  int most = 0;
  for (const GpuSpec& g : gpu_table()) most = std::max(most, g.nvlink.links);
  return most;
}

}  // namespace colltune::topo
