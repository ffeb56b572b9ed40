#pragma once
// What the tuner minimises: the predicted (or measured) time of one training step for a
// candidate configuration.
#include <limits>
#include <string>

#include "colltune/tuner/runtime_model.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/space.hpp"

namespace colltune::tuner {

struct Evaluation {
  Candidate candidate;
  // Microseconds; +infinity when the configuration cannot run (an algorithm not applicable to
  // the rank layout).
  double step_time_us = std::numeric_limits<double>::infinity();
  bool feasible() const { return step_time_us < std::numeric_limits<double>::infinity(); }
};

class Objective {
 public:
  virtual ~Objective() = default;
  virtual std::string name() const = 0;
  // Step time in microseconds, +infinity when infeasible. Throws colltune::Error for bad input.
  virtual double evaluate(const Candidate& candidate) = 0;
  // The runtime the objective prices (nullptr: colltune's executors without NCCL's model).
  virtual const RuntimeModel* runtime_model() const { return nullptr; }
  // Whether evaluate() may run on several threads at once (a grid search then uses them); an
  // objective that measures the machine must not.
  virtual bool concurrent() const { return false; }
};

// The training-step model with the analytical cost model (Engine::analytic, microseconds per
// configuration) or the discrete-event simulator (Engine::event, slower, models contention),
// for what `runtime` runs (runtime_model.hpp: NCCL's allreduces are priced by NCCL's model
// under either engine).
class SimulatedObjective : public Objective {
 public:
  // `topology` and `workload` must outlive the objective. `costs` are the step model's named
  // costs (step_costs.hpp; `tune --cost` sets them as `step --cost` does).
  // `nccl_margin`: tune --nccl-margin; `nccl`: the user's NCCL settings (RuntimeOptions).
  SimulatedObjective(const topo::Topology& topology, const sim::Workload& workload, sim::Engine engine,
                     const RuntimeSpec& runtime = coll::Runtime::horovod, const sim::StepCosts& costs = {},
                     double nccl_margin = kDefaultNcclMargin, const sim::NcclOptions& nccl = {});
  std::string name() const override;
  double evaluate(const Candidate& candidate) override;
  const RuntimeModel* runtime_model() const override { return &runtime_; }
  // A model: its caches are shared safely (OnceMap) and a price depends on its inputs alone.
  bool concurrent() const override { return true; }
  // The full step (buffers with their start/end times) for the report's timeline.
  sim::StepResult step(const Candidate& candidate) const;
  sim::Engine engine() const { return engine_; }
  // The costs as given (for another objective on the same costs) and as the step model
  // resolved them (derived ones filled in: what the step was priced with).
  const sim::StepCosts& given_costs() const { return given_costs_; }
  const sim::StepCosts& costs() const { return simulator_.costs(); }

 private:
  sim::StepCosts given_costs_;
  RuntimeModel runtime_;
  sim::StepSimulator simulator_;
  const sim::Workload& workload_;
  sim::Engine engine_;
};

}  // namespace colltune::tuner
