#pragma once
// `--precision` and `--measured-throughput`, taken alike by the commands that time a training
// step's compute: step, tune and sweep (sim/compute_source.hpp).
#include <CLI/CLI.hpp>
#include <string>

#include "colltune/sim/compute_source.hpp"

namespace colltune::cli {

struct ComputeArgs {
  std::string precision;  // fp32 | tf32 | amp | bf16; empty: the model spec's, else the GPU's default
  std::string measured;   // images or sequences per second per GPU; empty: the fitted table
};

void add_compute_options(CLI::App& command, ComputeArgs& args);
// The request for a workload timed on `gpu` (the topology's). colltune::Error naming the option
// for an unknown precision or a measured throughput that is not a number.
sim::ComputeRequest compute_request(const ComputeArgs& args, const std::string& gpu);

}  // namespace colltune::cli
