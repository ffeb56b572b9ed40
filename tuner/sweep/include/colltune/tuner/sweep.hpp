#pragma once
// colltune sweep: one or two things varied, each point predicted at Horovod's defaults and
// tuned. A thin loop over tune(): every point is exactly what `colltune tune` gives for that
// topology and model (the baseline of a tune is the defaults' step).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "colltune/sim/bottleneck.hpp"
#include "colltune/sim/compute_source.hpp"
#include "colltune/tuner/space.hpp"
#include "colltune/tuner/tuner.hpp"

namespace colltune::tuner {

// One varied thing: a parameter of the topology spec (nodes, nic_gbit, oversub, gpus, gpu,
// nvls, sharp, ... as the preset or FILE:nodes= spec takes them; nvls and sharp also read on
// and off), `topology` (whole topology specs: the base --topology is then not needed),
// `model` (model specs), `batch` (the model's batch size) or `runtime`.
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};
// "nodes=1,2,4": throws colltune::Error for a missing '=', an empty list or an empty value.
// `runtime` and `topology` values hold commas of their own: an item that does not start a
// runtime (a spec: has '=' before any ':') continues the one before it.
SweepAxis parse_sweep_axis(const std::string& text);
// Every combination of the axes' values, first axis slowest.
std::vector<std::vector<std::string>> sweep_points(const std::vector<SweepAxis>& axes);

struct SweepSpec {
  std::string topology;  // the base spec; axes override or add its parameters (empty with a topology axis)
  std::string model;     // the base model spec
  std::vector<SweepAxis> axes;  // one or two
  RuntimeSpec runtime = coll::Runtime::horovod;  // as tune --runtime; an axis `runtime` overrides it
  TuneOptions tune;             // the search at each point (progress is ignored)
  sim::StepCosts costs;         // the step model's costs at every point (as tune --cost)
  sim::NcclOptions nccl;        // the user's NCCL settings at every point (as tune --nccl-algo ...)
  // --precision and --measured-throughput at every point; `gpu` is ignored (each point's
  // topology gives its own).
  sim::ComputeRequest compute;
};

struct SweepPoint {
  std::vector<std::string> values;  // one per axis
  std::string topology;             // the spec this point ran
  std::string model;
  int ranks = 0;
  std::string compute;         // where the compute comes from (sim::LoadedWorkload::compute)
  double compute_us = 0;       // the step's compute (the same at every setting)
  double default_step_us = 0;  // Horovod's defaults (the tune's baseline)
  double tuned_step_us = 0;
  Candidate tuned;
  sim::Bottleneck bottleneck;  // what limits the tuned step (sim/bottleneck.hpp)
  double default_efficiency() const { return compute_us / default_step_us; }
  double tuned_efficiency() const { return compute_us / tuned_step_us; }
};

struct SweepResult {
  SweepSpec spec;
  std::vector<SweepPoint> points;  // first axis slowest, second fastest
  // Where tuning changes the answer: between neighbours along the first axis, the step at the
  // defaults and the tuned step move by factors more than 10% apart.
  std::vector<std::string> notes;
  // Neighbours along the first axis whose tuned step does not move (within 1 %), with what
  // pinned the second ("nic_gbit=200 -> nic_gbit=400: the tuned step does not move (x1.00):
  // pinned by compute ...").
  std::vector<std::string> pinned;
};

// The topology and model specs of a point (exposed for tests).
std::string sweep_topology_spec(const std::string& base, const std::vector<SweepAxis>& axes,
                                const std::vector<std::string>& values);
std::string sweep_model_spec(const std::string& base, const std::vector<SweepAxis>& axes,
                             const std::vector<std::string>& values);

// Checks every point's topology and model first (one line naming the axis and value), then
// tunes each; `progress(done, total, point)` after each point.
SweepResult run_sweep(const SweepSpec& spec,
                      const std::function<void(std::size_t, std::size_t, const SweepPoint&)>& progress = {});

std::string sweep_text(const SweepResult& result);
std::string sweep_csv(const SweepResult& result);
std::string sweep_json(const SweepResult& result);
std::string sweep_html(const SweepResult& result);

}  // namespace colltune::tuner
