// Layer kinds, compute precisions and the achieved rates a GPU gives each kind (profiles.hpp).
// The fractions come from sim/workload/data/achieved_fractions.csv, compiled in
// (fractions_data.cpp.in): the fit of colltune_fit_compute to published throughput.
#include <array>
#include <map>
#include <string>
#include <utility>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"
#include "csv_table.hpp"

namespace colltune::sim {
namespace detail {
std::string_view achieved_fractions_csv();  // fractions_data.cpp (generated)
}  // namespace detail
namespace {

constexpr std::array<std::pair<Precision, std::string_view>, 5> kPrecisionNames{{
    {Precision::fp32, "fp32"},
    {Precision::tf32, "tf32"},
    {Precision::amp, "amp"},
    {Precision::bf16, "bf16"},
    {Precision::amp, "fp16"},  // the hardware table's amp_precision spells mixed fp16 so
}};

// The fractions file, by GPU and precision class ("fp32", "tf32", "amp"); "pooled" rows hold
// what every GPU shares.
using FractionTable = std::map<std::pair<std::string, std::string>, AchievedFractions>;

FractionTable read_fraction_table() {
  const detail::CsvTable csv = detail::parse_csv(detail::achieved_fractions_csv(), "achieved_fractions.csv");
  FractionTable table;
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    AchievedFractions f{csv.number(r, "convolution"), csv.number(r, "matmul"), csv.number(r, "memory"),
                        static_cast<int>(csv.number(r, "rows"))};
    table[{csv.at(r, "gpu"), csv.at(r, "precision")}] = f;
  }
  return table;
}

const FractionTable& fraction_table() {
  static const FractionTable table = read_fraction_table();
  return table;
}

}  // namespace

std::string_view to_string(Precision precision) {
  for (const auto& [p, name] : kPrecisionNames)
    if (p == precision) return name;
  return "?";
}

Precision parse_precision(std::string_view name) {
  for (const auto& [p, n] : kPrecisionNames)
    if (n == name) return p;
  throw Error("unknown precision '" + std::string(name) + "' (valid: fp32, tf32, amp, bf16)");
}

Precision default_precision(const topo::GpuSpec& gpu) {
  return gpu.amp_precision() == "fp32" ? Precision::fp32 : Precision::amp;
}

std::string describe_precision(const topo::GpuSpec& gpu, Precision precision, bool is_default) {
  std::string out(to_string(precision));
  switch (precision) {
    case Precision::fp32: out += " (fp32 math)"; break;
    case Precision::tf32: out += gpu.peak.tf32 > 0 ? " (TF32 tensor cores)" : " (no TF32 on " + gpu.name + ": fp32 math)"; break;
    case Precision::amp: out += " (mixed fp16, fp32 gradients)"; break;
    case Precision::bf16: out += " (mixed bf16, fp32 gradients)"; break;
  }
  if (is_default)
    out.insert(out.size() - 1, precision == Precision::fp32 ? "; the " + gpu.name + "'s default: its published results are fp32"
                                                            : "; the " + gpu.name + "'s default: its published results are mixed precision");
  return out;
}

// The class of the fractions table: tf32 on a GPU without TF32 runs fp32 math; amp and bf16 run
// on the same half-precision tensor cores at the same peak.
std::string_view fraction_class(const topo::GpuSpec& gpu, Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return gpu.peak.tf32 > 0 ? "tf32" : "fp32";
    case Precision::amp:
    case Precision::bf16: return "amp";
  }
  return "fp32";
}

AchievedFractions achieved_fractions(const topo::GpuSpec& gpu, Precision precision) {
  const std::string cls(fraction_class(gpu, precision));
  const FractionTable& table = fraction_table();
  if (auto it = table.find({gpu.name, cls}); it != table.end()) return it->second;
  if (auto it = table.find({"pooled", cls}); it != table.end()) return it->second;
  throw Error("internal: no achieved fractions for " + gpu.name + " " + cls);
}

double peak_tflops(const topo::GpuSpec& gpu, Precision precision) {
  switch (precision) {
    case Precision::fp32: return gpu.peak.fp32;
    case Precision::tf32: return gpu.peak.tf32 > 0 ? gpu.peak.tf32 : gpu.peak.fp32;  // no TF32: fp32 math
    case Precision::amp: return gpu.peak.fp16;
    case Precision::bf16:
      if (gpu.peak.bf16 > 0) return gpu.peak.bf16;
      throw Error("precision bf16: the " + gpu.board + " (" + gpu.name + ") has no bf16 (use amp or fp32)");
  }
  return 0;
}

std::size_t activation_bytes(Precision precision) {
  // tf32 stores activations as fp32; only the mixed precisions halve them.
  return precision == Precision::amp || precision == Precision::bf16 ? 2 : 4;
}

ComputeRates compute_rates(const topo::GpuSpec& gpu, Precision precision) {
  const double peak = peak_tflops(gpu, precision);
  const AchievedFractions f = achieved_fractions(gpu, precision);
  return {peak * f.conv, peak * f.matmul, gpu.memory_gbps * f.memory, activation_bytes(precision)};
}

ComputeRates uniform_rates(double tflops) { return {tflops, tflops, 0, 2}; }

}  // namespace colltune::sim
