#pragma once
// `--cost NAME=VALUE` (repeatable), the step model's named costs (sim/step_costs.hpp), taken
// alike by the commands that price a training step: step and tune.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "colltune/sim/step_costs.hpp"

namespace colltune::cli {

// The option, its help listing every named cost (sim::step_cost_fields).
CLI::Option* add_step_cost_option(CLI::App& command, std::vector<std::string>& assignments);
// The costs with `assignments` applied in order; colltune::Error for an unknown name or a value
// out of range, naming the assignment.
sim::StepCosts step_costs(const std::vector<std::string>& assignments);

}  // namespace colltune::cli
