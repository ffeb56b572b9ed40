#include "options/compute_option.hpp"

#include <charconv>
#include <cmath>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"

namespace colltune::cli {

void add_compute_options(CLI::App& command, ComputeArgs& args) {
  command.add_option("--precision", args.precision,
                     "what the layers compute in: fp32, tf32, amp (mixed fp16) or bf16 (default: what the GPU's "
                     "published results use: fp32 on P100, amp on the others); gradients stay fp32");
  command.add_option("--measured-throughput", args.measured,
                     "one GPU's measured training throughput (images or sequences per second) at the model's batch: "
                     "replaces the fitted compute");
}

sim::ComputeRequest compute_request(const ComputeArgs& args, const std::string& gpu) {
  sim::ComputeRequest request;
  request.gpu = gpu;
  if (!args.precision.empty()) {
    try {
      sim::parse_precision(args.precision);  // an unknown one fails before any work
    } catch (const Error& e) {
      throw Error("--precision " + args.precision + ": " + e.what());
    }
    request.precision = args.precision;
  }
  if (!args.measured.empty()) {
    double value = 0;
    const char* end = args.measured.data() + args.measured.size();
    const auto [ptr, ec] = std::from_chars(args.measured.data(), end, value);
    if (ec != std::errc() || ptr != end || !std::isfinite(value))
      throw Error("--measured-throughput " + args.measured + ": expected a number of images or sequences per second");
    if (!(value > 0))
      throw Error("--measured-throughput " + args.measured + ": expected a positive number of images or sequences per "
                  "second per GPU");
    request.measured_samples_per_s = value;
  }
  return request;
}

}  // namespace colltune::cli
