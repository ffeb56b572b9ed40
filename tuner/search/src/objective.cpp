// Simulated objectives: the training-step model over the analytical or event engine.
#include "colltune/tuner/objective.hpp"

#include <cmath>

#include "colltune/common/error.hpp"

namespace colltune::tuner {

SimulatedObjective::SimulatedObjective(const topo::Topology& topology, const sim::Workload& workload,
                                       sim::Engine engine, const RuntimeSpec& runtime, const sim::StepCosts& costs,
                                       double nccl_margin, const sim::NcclOptions& nccl)
    : given_costs_(costs),
      runtime_(topology, runtime, RuntimeOptions{true, costs, nccl_margin, nccl}),
      simulator_(topology, costs),
      workload_(workload),
      engine_(engine) {}

std::string SimulatedObjective::name() const { return engine_ == sim::Engine::analytic ? "analytic" : "event"; }

sim::StepResult SimulatedObjective::step(const Candidate& candidate) const {
  return simulator_.run(workload_, runtime_.step_config(candidate), engine_);
}

double SimulatedObjective::evaluate(const Candidate& candidate) {
  // An algorithm that does not apply to this layout (e.g. hierarchical on one host) is an
  // answer, not a failure: the candidate is infeasible.
  try {
    const double t = step(candidate).step_time_us;
    return std::isfinite(t) ? t : std::numeric_limits<double>::infinity();
  } catch (const Error&) {
    return std::numeric_limits<double>::infinity();
  }
}

}  // namespace colltune::tuner
