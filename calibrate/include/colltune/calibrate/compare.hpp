#pragma once
// Measured beside predicted (colltune compare, docs/calibration.md): every measured row with
// colltune's prediction for it on a topology (calibrated or not), the relative error, and a
// summary per model and overall. The same predictor as calibration (calibrate.hpp).
#include <map>
#include <string>
#include <vector>

#include "colltune/topology/topology.hpp"
#include "colltune/calibrate/calibrate.hpp"
#include "colltune/calibrate/measurements.hpp"

namespace colltune::tuner {

struct Comparison {
  std::string topology;
  int nranks = 0;
  std::vector<RowFit> rows;  // flag "spike" (is_spike) or empty
  // Errors of the rows that are not spikes.
  std::map<std::string, ErrorSummary> by_model;
  ErrorSummary overall;
  std::size_t spikes = 0;
  std::vector<std::string> not_modelled;  // "SOURCE: why"
  std::vector<std::string> nccl_model;    // "SOURCE: why": rows NCCL's own time predicts (no colltune schedule)
  std::vector<std::string> skipped;
  std::vector<std::string> unread_nccl_env;  // MeasurementSet::unread_nccl_env
};

// Throws colltune::Error for measurements whose rank count is not the topology's, or when no
// row has a model.
Comparison compare_measurements(const topo::Topology& topology, const MeasurementSet& measurements);

std::string comparison_text(const Comparison& c);
std::string comparison_json(const Comparison& c);
// A self-contained page: per model, measured and predicted time against size (log-log), and
// the table.
std::string comparison_html(const Comparison& c);

// The calibrated file against the fit (WrittenCheck, calibrate.hpp).
// `written_json`: the calibrated file as calibrate writes it (calibrated_topology_json).
WrittenCheck check_written(const std::string& written_json, const CalibrationResult& result,
                           const MeasurementSet& measurements);
// One line naming the misses and the file's errors; empty where nothing missed.
std::string written_check_text(const WrittenCheck& w);

}  // namespace colltune::tuner

namespace colltune::tuner {

// A Horovod timeline's steps beside the step model's prediction for the same run (the
// workload the timeline describes, at the run's fusion threshold and cycle time).
struct TimelineComparison {
  std::string source;
  std::size_t steps = 0;            // steps the timeline shows
  double measured_step_us = -1;     // mean period between step starts; < 0 with one step
  double predicted_step_us = 0;
  std::size_t measured_buffers_per_step = 0;  // NCCL_ALLREDUCE activities per step
  std::size_t predicted_buffers = 0;
  // Per step, measured: each timed activity's total; predicted: the counterpart (< 0: none).
  struct Part {
    std::string name;
    double measured_us = 0;
    double predicted_us = -1;
  };
  std::vector<Part> parts;
  double measured_copy_gbps = -1;  // fusion-buffer copy rate the timeline shows (< 0: no copies)
  double model_copy_gbps = 0;      // the step model's fusion_copy_gbps on this topology
};

// Throws colltune::Error for a file that is not a Horovod timeline or shows no allreduce.
TimelineComparison compare_timeline(const topo::Topology& topology, const std::string& path,
                                    std::size_t fusion_threshold_bytes, double cycle_time_us);
std::string timeline_comparison_text(const TimelineComparison& c);

}  // namespace colltune::tuner
