// Loading a workload with its compute source (compute_source.hpp).
#include "colltune/sim/compute_source.hpp"

#include <cmath>
#include <cstdio>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::sim {
namespace {

// An absurd measurement: more than this many times the GPU's peak in the model's FLOPs.
constexpr double kMaxTimesPeak = 10;

std::string num(double v, int digits = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

const char* unit(const ModelArch& arch) { return arch.seq > 0 ? "sequences/s" : "images/s"; }

double compute_us(const Workload& w) { return w.forward_us + w.backward_us; }

// The precision of a profile: --precision, else the spec's precision=, else the GPU's default.
Precision resolve_precision(const std::string& spec, const ProfileOptions& options, const ComputeRequest& request,
                            const topo::GpuSpec& gpu) {
  if (!request.precision.empty()) {
    const Precision p = parse_precision(request.precision);
    if (!options.precision.empty() && parse_precision(options.precision) != p)
      throw Error("--precision " + request.precision + ": the model spec '" + spec + "' says precision=" +
                  options.precision + " (give one)");
    return p;
  }
  return options.precision.empty() ? default_precision(gpu) : parse_precision(options.precision);
}

void check_measured(double measured, const ModelArch& arch, const topo::GpuSpec& gpu, Precision precision) {
  if (!(measured > 0) || !std::isfinite(measured))
    throw Error("--measured-throughput " + num(measured) + ": expected a positive number of " + unit(arch) +
                " per GPU");
  const double implied_tflops = measured * 3 * arch.forward_flops_per_sample() / 1e12;
  const double peak = peak_tflops(gpu, precision);
  if (implied_tflops > kMaxTimesPeak * peak)
    throw Error("--measured-throughput " + num(measured) + " " + unit(arch) + ": " + arch.name + " would run at " +
                num(implied_tflops) + " TFLOP/s, more than " + num(kMaxTimesPeak) + "x the " + gpu.name + "'s peak of " +
                num(peak) + " TFLOP/s in " + std::string(to_string(precision)));
}

LoadedWorkload load_profile(const std::string& spec, const ComputeRequest& request) {
  const std::string name = spec.substr(0, spec.find(':'));
  const ProfileOptions options = parse_profile_options(spec, request.gpu);
  const topo::GpuSpec& gpu = topo::find_gpu(request.gpu, "model " + name);
  if (options.tflops > 0 && !request.precision.empty())
    throw Error("--precision " + request.precision + ": the model spec '" + spec + "' sets tflops= (one rate; give one)");
  if (options.tflops > 0 && request.measured_samples_per_s != 0)
    throw Error("--measured-throughput: the model spec '" + spec + "' sets tflops= (give one)");
  const Precision precision = resolve_precision(spec, options, request, gpu);
  ProfileOptions resolved = options;
  resolved.precision = std::string(to_string(precision));
  const ModelArch arch = model_architecture(name, options.seq, options.head);
  const int batch = options.batch > 0 ? options.batch : arch.default_batch;
  LoadedWorkload out;
  out.workload = make_profile(name, resolved);
  out.workload.name = spec;
  if (options.tflops > 0) {
    out.samples_per_s = 1e6 * batch / compute_us(out.workload);
    out.compute = "tflops=" + num(options.tflops) + ": one rate for every FLOP, memory-bound layers free (" +
                  num(out.samples_per_s) + " " + unit(arch) + " per GPU)";
    return out;
  }
  out.precision = std::string(to_string(precision));
  const bool is_default = request.precision.empty() && options.precision.empty();
  if (request.measured_samples_per_s != 0) {
    check_measured(request.measured_samples_per_s, arch, gpu, precision);
    const double table_rate = 1e6 * batch / compute_us(out.workload);
    out.workload = with_compute_scaled(out.workload, table_rate / request.measured_samples_per_s);
    out.workload.name = spec;
    out.samples_per_s = request.measured_samples_per_s;
    out.compute = "measured: " + num(out.samples_per_s) + " " + unit(arch) + " per GPU (--measured-throughput), in " +
                  "place of the fitted table's " + num(table_rate) + " on " + gpu.name + " in " + out.precision;
    return out;
  }
  const AchievedFractions f = achieved_fractions(gpu, precision);
  out.samples_per_s = 1e6 * batch / compute_us(out.workload);
  out.compute = "published-throughput fit (" +
                (f.rows > 0 ? std::to_string(f.rows) + " rows of " + gpu.name : "no rows of " + gpu.name + ": shared fractions") +
                "): " + num(out.samples_per_s) + " " + unit(arch) + " per GPU in " +
                describe_precision(gpu, precision, is_default);
  return out;
}

}  // namespace

LoadedWorkload load_workload(const std::string& spec, const ComputeRequest& request) {
  if (is_profile_spec(spec)) return load_profile(spec, request);
  LoadedWorkload out;
  bool timeline = false;
  out.workload = load_workload(spec, &out.notes, request.gpu, &timeline);  // a file, or "unknown model"
  const std::string given = timeline ? "a Horovod timeline's compute is measured" : "a workload file gives forward_us and backward_us";
  if (!request.precision.empty())
    throw Error("--precision " + request.precision + ": " + spec + ": " + given + " (the option is for built-in models)");
  if (request.measured_samples_per_s != 0)
    throw Error("--measured-throughput: " + spec + ": " + given + " (the option is for built-in models)");
  out.compute = timeline ? "measured: the Horovod timeline's compute (gradient ready times, forward from the step period)"
                         : "the workload file's forward_us and backward_us";
  return out;
}

}  // namespace colltune::sim
