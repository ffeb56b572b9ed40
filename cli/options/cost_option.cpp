#include "options/cost_option.hpp"

namespace colltune::cli {

CLI::Option* add_step_cost_option(CLI::App& command, std::vector<std::string>& assignments) {
  std::string names;
  for (const sim::StepCostField& f : sim::step_cost_fields()) names += (names.empty() ? "" : ", ") + std::string(f.name);
  return command.add_option("--cost", assignments,
                            "set a step cost NAME=VALUE (repeatable): " + names + " (docs/step-model.md)");
}

sim::StepCosts step_costs(const std::vector<std::string>& assignments) {
  sim::StepCosts costs;
  for (const std::string& assignment : assignments) sim::set_step_cost(costs, assignment);
  return costs;
}

}  // namespace colltune::cli
