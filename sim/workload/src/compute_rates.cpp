// Layer kinds, compute precisions and the achieved rates a GPU gives each kind (profiles.hpp).
#include <array>
#include <string>
#include <utility>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"

namespace colltune::sim {
namespace {

constexpr std::array<std::pair<Precision, std::string_view>, 4> kPrecisionNames{{
    {Precision::fp32, "fp32"},
    {Precision::tf32, "tf32"},
    {Precision::fp16, "fp16"},
    {Precision::bf16, "bf16"},
}};

}  // namespace

std::string_view to_string(Precision precision) {
  for (const auto& [p, name] : kPrecisionNames)
    if (p == precision) return name;
  return "?";
}

Precision parse_precision(std::string_view name) {
  for (const auto& [p, n] : kPrecisionNames)
    if (n == name) return p;
  throw Error("unknown precision '" + std::string(name) + "' (valid: fp32, tf32, fp16, bf16)");
}

ComputeRates compute_rates(const topo::GpuSpec& gpu, Precision precision) {
  const double peak = precision == Precision::fp32   ? gpu.fp32_tflops
                      : precision == Precision::tf32 ? gpu.tf32_tflops
                                                     : gpu.half_tflops;
  // tf32 stores activations as fp32; only fp16/bf16 halve them.
  const std::size_t bytes = precision == Precision::fp16 || precision == Precision::bf16 ? 2 : 4;
  return {peak * gpu.conv_fraction, peak * gpu.matmul_fraction, gpu.memory_gbps * gpu.memory_fraction, bytes};
}

ComputeRates uniform_rates(double tflops) { return {tflops, tflops, 0, 2}; }

}  // namespace colltune::sim
