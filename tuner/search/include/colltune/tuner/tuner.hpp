#pragma once
// The autotuner: searches the space with a strategy over an objective, checks fp16 against the
// accuracy limit, compares with Horovod's defaults, and gathers what the emitters and the
// report need (per-size algorithm tables, busbw curves, a fusion x cycle heatmap, the fastest
// step's timeline).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "colltune/sim/step_model.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/algo_table.hpp"
#include "colltune/tuner/fp16_error.hpp"
#include "colltune/tuner/objective.hpp"
#include "colltune/tuner/runtime_model.hpp"
#include "colltune/tuner/space.hpp"
#include "colltune/tuner/strategy.hpp"

namespace colltune::tuner {

struct TuneOptions {
  StrategyKind strategy = StrategyKind::grid;
  std::size_t budget = 0;  // see SearchOptions
  std::uint64_t seed = 1;
  std::vector<std::string> fixes;  // "--fix" assignments, applied in order
  double max_fp16_error = kDefaultMaxFp16Error;
  std::size_t top_n = 10;
  std::function<void(std::size_t, std::size_t, const Evaluation&)> progress;
  std::size_t threads = 0;  // see SearchOptions
};

// Step time (analytical model) over fusion threshold x cycle time, other knobs as in the best
// configuration; one grid with fp16 off and one with fp16 on.
struct Heatmap {
  std::vector<std::size_t> fusion_thresholds;
  std::vector<double> cycle_times_us;
  std::vector<std::vector<double>> step_us[2];  // [fp16][fusion index][cycle index]
};

struct BusbwCurve {
  std::string label;  // "ring", "hierarchical(ring)", ...
  std::vector<std::size_t> bytes;
  std::vector<double> busbw_gbps;  // 0 where the algorithm does not apply
};

struct TuneResult {
  // What was tuned.
  std::string topology;
  int ranks = 0;
  int hosts = 0;
  std::string model;
  std::string compute;  // where the workload's compute time comes from (sim::LoadedWorkload::compute)
  std::size_t gradient_bytes = 0;
  double forward_us = 0;  // the workload's forward pass (buffers are timed from after it)
  std::string objective;
  coll::Runtime runtime = coll::Runtime::horovod;
  std::string baseline_description;  // what the baseline runs, and any fallback with its reason
  // --runtime ps: the allreduce the job could run instead, side by side: the step at Horovod's
  // defaults with NCCL's choice (RuntimeModel(horovod).baseline(), analytic), same machine and
  // model. 0 for the other runtimes.
  double allreduce_step_us = 0;
  bool nccl_priced = false;          // NCCL's allreduces priced by NCCL's model
  sim::NcclOptions nccl;             // the user's NCCL settings NCCL picked under (RuntimeModel)
  // The step model's costs the search priced with, derived ones resolved (a simulated
  // objective; nullopt for a measured one, whose steps are real).
  std::optional<sim::StepCosts> step_costs;
  StrategyKind strategy = StrategyKind::grid;
  std::uint64_t seed = 1;
  std::size_t space_size = 0;
  std::vector<std::string> fixes;
  // The answer.
  Evaluation best;
  Evaluation baseline;
  std::vector<Evaluation> history;  // every evaluation, in order
  std::vector<Evaluation> top;      // the fastest distinct feasible ones, fastest first
  sim::StepResult best_step;        // the fastest step's buffers (analytical or event model)
  // Horovod's flag for the best configuration: the candidate's knob; on colltune's executors with
  // "auto" (which may switch per buffer), whether most bytes went through a per-host algorithm.
  bool hierarchical_allreduce = false;
  // fp16: the estimate for the best configuration's algorithm, and the best times with it off/on.
  Fp16Estimate fp16;
  double best_fp16_off_us = 0;  // +inf when not evaluated
  double best_fp16_on_us = 0;
  // Report material.
  std::vector<SizeRange> algo_table;  // the per-size choice the best configuration's buffers follow
  std::vector<SizeRange> nccl_table;  // the rows nccl_tuner.conf hands NCCL (empty: NCCL's own choice)
  std::string no_nccl_rows;           // why nccl_table is empty ("" where it has rows)
  // On a calibrated topology, the message sizes its fit measured (0, 0 otherwise): table rows
  // beyond them extrapolate the fit, and nccl_tuner.conf says so.
  std::size_t measured_min_bytes = 0;
  std::size_t measured_max_bytes = 0;
  std::vector<BusbwCurve> busbw;
  Heatmap heatmap;
  double search_ms = 0;

  double speedup() const { return baseline.step_time_us / best.step_time_us; }
};

// Runs the search for the objective's runtime (Objective::runtime_model; colltune's executors
// when it has none). `objective` is what is minimised (analytic, event or measured); the report
// material always comes from the analytical model. Throws colltune::Error for bad options
// (an unknown --fix knob, fp16 pinned on above the error limit, ...).
TuneResult tune(const topo::Topology& topology, const sim::Workload& workload, Objective& objective,
                const TuneOptions& options);

// The space tune() searches (the runtime's defaults, then the fixes), exposed for tests and
// benchmarks.
SearchSpace make_space(const RuntimeModel& runtime, const std::vector<std::string>& fixes);

}  // namespace colltune::tuner
