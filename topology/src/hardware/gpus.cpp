// The GPU generation table (gpus.hpp). Peak figures are the data sheets' dense numbers (the
// "with sparsity" figures halved); the achieved fractions are derived, not measured, and the
// same for every generation (docs/step-model.md says how).
#include "colltune/topology/gpus.hpp"

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::topo {
namespace {

// conv and matmul: 40% of the peak, the model FLOPs utilisation the step model assumed for
// every layer before it had a table; memory-bound: 80% of the data-sheet bandwidth.
constexpr double kConvFraction = 0.40;
constexpr double kMatmulFraction = 0.40;
constexpr double kMemoryFraction = 0.80;

GpuSpec gpu(std::string name, std::string description, int cc, int pcie_gen, double fp32, double tf32, double half,
            double memory_gbps, std::string amp, std::string source) {
  return {std::move(name), std::move(description), cc, pcie_gen, fp32, tf32, half, memory_gbps,
          kConvFraction, kMatmulFraction, kMemoryFraction, std::move(amp), std::move(source)};
}

}  // namespace

const std::vector<GpuSpec>& gpu_table() {
  static const std::vector<GpuSpec> table{
      // P100 has no tensor cores and no TF32; its fp16 rate is twice fp32.
      gpu("p100", "Tesla P100 SXM2 16GB", 60, 3, 10.6, 10.6, 21.2, 732, "fp32",
          "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf"),
      // V100: fp16 tensor cores (125 TFLOP/s), no TF32.
      gpu("v100", "Tesla V100 SXM2", 70, 3, 15.7, 15.7, 125, 900, "fp16",
          "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"),
      gpu("a100", "A100 SXM4 80GB", 80, 4, 19.5, 156, 312, 2039, "bf16",
          "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
          "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"),
      gpu("h100", "H100 SXM5 80GB", 90, 5, 67, 494.7, 989.4, 3350, "bf16",
          "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"),
      gpu("h200", "H200 SXM 141GB", 90, 5, 67, 494.7, 989.4, 4800, "bf16",
          "https://www.nvidia.com/en-us/data-center/h200/"),
      gpu("l40s", "L40S PCIe 48GB", 89, 4, 91.6, 183, 362.05, 864, "bf16",
          "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"),
  };
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

const GpuSpec& gpu_of(const Topology& topology) {
  if (!topology.gpu.empty()) return find_gpu(topology.gpu, "topology '" + topology.name + "'");
  const int cc = topology.num_ranks() > 0 ? topology.device(topology.device_of_rank(0)).compute_capability : 0;
  for (const GpuSpec& g : gpu_table())
    if (g.compute_capability == cc) return g;  // 90: h100 comes before h200
  return find_gpu("h100");
}

}  // namespace colltune::topo
