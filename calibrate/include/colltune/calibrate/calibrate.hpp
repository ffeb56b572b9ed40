#pragma once
// Calibration: fit the machine model to measured collective times (docs/calibration.md).
//
// The model is the analytical one every prediction of colltune uses (sim/cost_model.hpp): each
// algorithm priced with alpha/beta per link level and the reduction rate gamma. Calibration
// fits those figures, plus the bandwidth efficiency of NCCL's LL and LL128 protocols where the
// measurements name them:
//   alpha_intra_us, intra_gbps   latency and bandwidth between ranks of one host
//   alpha_inter_us, inter_gbps   the same between hosts
//   reduce_gbps                  the rate a rank reduces incoming data
//   ll_efficiency, ll128_efficiency  payload fraction of the bytes NCCL's LL / LL128 send
// A row is predicted by the schedule that ran it: a colltune algorithm by its registry entry;
// an NCCL run by the colltune schedule of NCCL's algorithm (Ring: nccl_ring, reduce_scatter_ring,
// allgather_ring; Tree: dbtree), NCCL_ALGO/NCCL_PROTO as the log gives them, otherwise NCCL's own
// choice for the size (sim/nccl_model.hpp) on the uncalibrated machine.
//
// The fit (Levenberg-Marquardt on log(predicted / measured), iteratively reweighted with Huber
// weights at 1.345 robust standard deviations): parameters in log space, so each stays
// positive and every row weighs by its relative error whatever its size. Before fitting:
//  - a parameter no modelled row depends on is held at the topology's value, and reported;
//  - rows slower than the next larger size of the same series by more than 1.5x (a warm-up
//    row, a hiccup) are reported and left out;
//  - a single size measured is an error: it cannot split a latency from a bandwidth;
//  - two parameters the rows cannot tell apart (the fit's Jacobian nearly singular), or one
//    they determine only to +-100%, are held at the topology's value, and reported.
// After fitting, rows whose residual exceeds 3 robust standard deviations are reported as
// outliers and left out, and the rest fitted again.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/calibrate/measurements.hpp"

namespace colltune::tuner {

// How far predictions are from measurements over some rows: |predicted / measured - 1|.
struct ErrorSummary {
  std::size_t rows = 0;
  double median_abs = 0;
  double max_abs = 0;
};
ErrorSummary summarize_errors(const std::vector<double>& abs_errors);

// Throws colltune::Error naming the first row measured on another rank count than the
// topology's (rows that do not state one, Horovod timelines, take the topology's).
void check_rank_count(const topo::Topology& topology, const MeasurementSet& measurements);

// The fitted parameters, in the order of calibration_parameter_names().
struct CalibValues {
  double alpha_intra_us = 0;
  double intra_gbps = 0;
  double alpha_inter_us = 0;
  double inter_gbps = 0;
  double reduce_gbps = 0;
  double ll_efficiency = 0.5;            // NCCL's LL: 8-byte lines carrying 4 bytes of data
  double ll128_efficiency = 120.0 / 128;  // NCCL's LL128: 128-byte lines carrying 120
  static constexpr int kCount = 7;
  double& at(int i);
  double at(int i) const;
};
const std::vector<std::string>& calibration_parameter_names();
// Index of a name; throws colltune::Error listing the names.
int calibration_parameter_index(const std::string& name);

// The figures the cost model derives from `topology` for its first `nranks` ranks (protocol
// efficiencies at NCCL's nominal values).
CalibValues values_of(const topo::Topology& topology, int nranks);

// What predicts a measured row, and its prediction for given parameter values.
class Predictor {
 public:
  Predictor(const topo::Topology& topology, int nranks);
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;
  // The model of a row: "ring", "nccl_ring+LL128", ...; nullopt with `why` set when colltune
  // has none (MPI_Allreduce, NCCL's NVLS and CollNet algorithms).
  std::optional<std::string> model_of(const Measurement& row, std::string* why = nullptr) const;
  double time_us(const Measurement& row, const CalibValues& values) const;  // the row must have a model
  // Which parameters the row's prediction can depend on (protocol efficiencies only for its protocol).
  std::vector<bool> touches(const Measurement& row) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct CalibrateOptions {
  std::vector<std::string> hold;  // parameter names held at the topology's value
  // Fit on every other size of each series and report the error on the rest (validation).
  bool holdout_half = false;
};

struct RowFit {
  std::string source;
  std::string model;  // Predictor::model_of
  std::size_t bytes = 0;
  double measured_us = 0;
  double predicted_us = 0;
  double rel_error = 0;   // predicted / measured - 1
  std::string flag;       // "", "outlier", "warm-up", "held out"
};

struct CalibrationResult {
  int nranks = 0;
  CalibValues before;  // the topology's figures
  CalibValues after;   // fitted (held parameters unchanged)
  std::vector<std::string> fitted;             // parameter names
  // Per parameter (CalibValues order), the standard error of its logarithm: about the relative
  // uncertainty of the fitted value (0 for held ones).
  std::vector<double> uncertainty;
  std::vector<std::string> held;               // "name: why"
  std::vector<RowFit> rows;                    // every modelled row
  std::vector<std::string> not_modelled;       // "SOURCE: why"
  std::vector<std::string> skipped;            // from the readers
  int iterations = 0;
  double median_abs_error = 0;  // over the rows fitted
  double max_abs_error = 0;
  double holdout_median_abs_error = -1;  // holdout_half: over the held-out rows
  double holdout_max_abs_error = -1;
  // From Horovod timelines: the rate their fusion-buffer copies ran at (< 0: no timeline). The
  // calibrated topology carries it as step_costs.fusion_copy_gbps, which the step model takes
  // in place of the rate it derives from the GPU.
  double fusion_copy_gbps = -1;
};

// Throws colltune::Error for measurements whose rank count is not the topology's, rows with no
// model at all, a single size, or an unknown --hold name.
CalibrationResult calibrate(const topo::Topology& topology, const MeasurementSet& measurements,
                            const CalibrateOptions& options = {});

// A copy of the topology whose derived figures are `values`: links inside hosts scaled in
// bandwidth and latency to the intra figures, links between hosts to the inter ones, every
// rank device reducing at reduce_gbps. `max_mismatch` (if given) receives the largest relative
// difference between `values` and the copy's derived figures.
topo::Topology apply_calibration(const topo::Topology& topology, int nranks, const CalibValues& values,
                                 double* max_mismatch = nullptr);

// The calibrated topology JSON: `topology` with apply_calibration(), and a "calibration" object
// holding the format version, the fitted values, held parameters, source files, and per-row
// residuals (docs/calibration.md).
std::string calibrated_topology_json(const topo::Topology& topology, const CalibrationResult& result);

// The calibration report as text (one screen) and as JSON.
std::string calibration_text(const CalibrationResult& result);
std::string calibration_json(const CalibrationResult& result);

}  // namespace colltune::tuner
