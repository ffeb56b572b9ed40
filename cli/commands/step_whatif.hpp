#pragma once
// `colltune step`'s what-if options: uneven data under hvd.join (--batches, --uneven,
// --uneven-spread) and failures (--fail, --run-steps and the recovery costs). step_cmd.cpp
// registers them, runs them after the step, and adds their JSON objects and text blocks.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "colltune/sim/failures.hpp"
#include "colltune/sim/step_costs.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/uneven.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::cli {

struct WhatIfArgs {
  long batches = 1000;              // --batches: per rank per epoch
  std::vector<std::string> uneven;  // --uneven WHO:N
  std::string spread;               // --uneven-spread X
  std::vector<std::string> fail;    // --fail HOST:STEP
  long run_steps = 0;               // --run-steps N
  long batch_size = 0;              // --batch-size: samples per rank per step; not given: the model's
  long commit_every = 100;
  long checkpoint_every = 1000;
  std::string state_size;  // empty: 2 x parameters x 4 B
  std::string storage_gbps = "2";  // GB/s, within the links' physical range
  std::string detect = "30s", rendezvous = "10s", relaunch = "60s";
  // Whether the options were given (their values alone cannot tell).
  const CLI::Option* batches_option = nullptr;
  const CLI::Option* run_steps_option = nullptr;
  const CLI::Option* batch_size_option = nullptr;
  bool given(const CLI::Option* o) const { return o != nullptr && o->count() > 0; }
  bool uneven_wanted() const { return given(batches_option) || !uneven.empty() || !spread.empty(); }
  bool fail_wanted() const { return !fail.empty(); }
};

void add_whatif_options(CLI::App& step, WhatIfArgs& args);

struct WhatIfResult {
  std::optional<sim::UnevenResult> uneven;
  std::optional<sim::FailureResult> failures;
  sim::FailureOptions failure_options;  // the inputs the failures were priced with
  long batch_size = 1;
};

// Runs what was asked; throws colltune::Error for bad input before any output is written.
// `rank_factor`: the --slow factors (empty: none); `seed`: --seed, for --uneven-spread.
WhatIfResult run_whatif(const WhatIfArgs& args, const std::string& model_spec, const topo::Topology& topology,
                        const sim::StepCosts& costs, const sim::StepSimulator& simulator, const sim::Workload& workload,
                        const sim::StepConfig& config, sim::Engine engine, const std::vector<double>& rank_factor,
                        std::uint64_t seed);

// Adds "uneven" and "failures" objects to the step's JSON where they were run.
void add_whatif_json(nlohmann::ordered_json& json, const WhatIfResult& result, const topo::Topology& topology);
void print_whatif(std::ostream& out, const WhatIfResult& result, const topo::Topology& topology);

}  // namespace colltune::cli
