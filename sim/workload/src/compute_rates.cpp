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

AchievedFractions achieved_fractions(const topo::GpuSpec& /*gpu*/) { return {}; }

double peak_tflops(const topo::GpuSpec& gpu, Precision precision) {
  switch (precision) {
    case Precision::fp32: return gpu.peak.fp32;
    case Precision::tf32: return gpu.peak.tf32 > 0 ? gpu.peak.tf32 : gpu.peak.fp32;  // no TF32: fp32 math
    case Precision::fp16: return gpu.peak.fp16;
    case Precision::bf16:
      if (gpu.peak.bf16 > 0) return gpu.peak.bf16;
      throw Error("precision bf16: the " + gpu.board + " (" + gpu.name + ") has no bf16 (use fp16 or fp32)");
  }
  return 0;
}

ComputeRates compute_rates(const topo::GpuSpec& gpu, Precision precision) {
  const double peak = peak_tflops(gpu, precision);
  const AchievedFractions f = achieved_fractions(gpu);
  // tf32 stores activations as fp32; only fp16/bf16 halve them.
  const std::size_t bytes = precision == Precision::fp16 || precision == Precision::bf16 ? 2 : 4;
  return {peak * f.conv, peak * f.matmul, gpu.memory_gbps * f.memory, bytes};
}

ComputeRates uniform_rates(double tflops) { return {tflops, tflops, 0, 2}; }

}  // namespace colltune::sim
