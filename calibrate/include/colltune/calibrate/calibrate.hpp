#pragma once
// Calibration: fit the machine model to measured collective times (docs/calibration.md).
//
// The model is the one every prediction of colltune uses: each colltune algorithm priced by the
// analytic model (sim/cost_model.hpp), each NCCL run by the one NCCL price path
// (sim/nccl_price.hpp: NCCL's choice, priced by its colltune schedule with the protocol's
// costs), both on the machine as collectives achieve it (sim/priced_machine.hpp). Calibration
// fits that machine's figures and NCCL's protocol efficiencies:
//   alpha_intra_us, intra_gbps   latency and bandwidth between ranks of one host
//   alpha_inter_us, inter_gbps   the same between hosts
//   reduce_gbps                  the rate a rank reduces incoming data
//   ll_efficiency, ll128_efficiency  payload fraction of the bytes NCCL's LL / LL128 send
// A row is predicted by the schedule that ran it: a colltune algorithm by its registry entry;
// an NCCL run by NCCL's algorithm and protocol as the log's NCCL_ALGO/NCCL_PROTO leave them to
// NCCL's model on the machine as measured (never as calibrated), priced by that algorithm's
// colltune schedule (Ring: nccl_ring, reduce_scatter_ring, allgather_ring; Tree: nccl_tree;
// NVLS: nccl_nvls; NVLSTree: nccl_nvls_tree; CollNetDirect: nccl_collnet). Where colltune has no
// schedule of it (CollNetChain, PAT, multi-node NVLS), NCCL's own time stands in: the row is
// compared, not fitted, and said so.
//
// The fit (Levenberg-Marquardt on log(predicted / measured), iteratively reweighted with Huber
// weights at 1.345 robust standard deviations): latencies and the reduction rate in log space,
// efficiencies as logits, link bandwidths as logits of their fraction of the line rate the
// topology declares (a fit never puts a link above its line rate; one that presses against it
// is reported). Before fitting:
//  - a parameter no modelled row depends on is held at the topology's value, and reported with
//    the measurement that would identify it;
//  - rows slower than the next larger size of the same series by more than 1.5x (a warm-up
//    row, a hiccup), and rows whose out-of-place and in-place times differ by more than 1.5x
//    either way (a spike in one of the two samples), are reported and left out;
//  - a single size measured is an error: it cannot split a latency from a bandwidth;
//  - two parameters the rows cannot tell apart (the fit's Jacobian nearly singular), or one
//    they determine only to +-100%, are held at the topology's value, and reported.
// After fitting, rows whose residual exceeds 3 robust standard deviations are reported as
// outliers and left out, and the rest fitted again. A fitted value outside any machine (a
// latency above 10 ms, a rate below 1 MB/s) is refused: the rows do not fit the model.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "colltune/calibrate/measurements.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/sim/nccl_price.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::tuner {

// How far predictions are from measurements over some rows: |predicted / measured - 1|.
struct ErrorSummary {
  std::size_t rows = 0;
  double median_abs = 0;
  double max_abs = 0;
};
ErrorSummary summarize_errors(const std::vector<double>& abs_errors);

// Whether a row's two samples of one call (nccl-tests' out-of-place and in-place times, a bench
// report's likewise) are 1.5x apart, either way: one of them was disturbed, and the row measures
// the disturbance, not the collective. calibrate leaves such rows out of the fit and compare out
// of its error summaries, each listing them as `spike`.
bool is_spike(const Measurement& m);

// Throws colltune::Error naming the first row measured on another rank count than the
// topology's (rows that do not state one, Horovod timelines, take the topology's), or a
// reduce-scatter or allgather row whose size is not a whole number of elements per rank of the
// topology (a log of another machine).
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
// A parameter and the measurement that would identify it where the rows cannot.
struct CalibrationParameter {
  std::string name;
  std::string identified_by;
};
const std::vector<CalibrationParameter>& calibration_parameters();
const std::vector<std::string>& calibration_parameter_names();
// Index of a name; throws colltune::Error listing the names.
int calibration_parameter_index(const std::string& name);

// The figures the cost model derives from `topology`'s links for its first `nranks` ranks
// (protocol efficiencies: the topology's calibration's, else NCCL's nominal values).
CalibValues values_of(const topo::Topology& topology, int nranks);
// The same on the machine as priced (sim::priced_machine: links at the fraction collectives
// achieve, unless calibrated): the figures every prediction starts from.
CalibValues priced_values_of(const topo::Topology& topology, int nranks);
// The values as the price paths take them.
sim::MachineFigures figures_of(const CalibValues& values);

// NCCL's pick for an NCCL row, and NCCL's own time for it beside colltune's.
struct NcclPick {
  std::string algorithm;  // NCCL's spelling: Ring, Tree, NVLS, ...
  std::string protocol;   // LL, LL128, Simple
  int channels = 0;
  double nccl_time_us = 0;
  std::string env;        // "NCCL_ALGO=Ring": the log's settings NCCL picked under ("" none)
};

// What predicts a measured row, and its prediction for given parameter values.
class Predictor {
 public:
  Predictor(const topo::Topology& topology, int nranks);
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;
  // The model of a row: "ring", "nccl_ring+ll128", "nccl:CollNetChain+simple" (NCCL's own
  // time); nullopt with `why` set when there is none (MPI_Allreduce, a machine NCCL's model
  // does not describe).
  std::optional<std::string> model_of(const Measurement& row, std::string* why = nullptr) const;
  // Where NCCL's own time stands in for a row (no colltune schedule of NCCL's pick): why.
  std::optional<std::string> nccl_model_only(const Measurement& row) const;
  // NCCL's pick for an NCCL row (nullopt for colltune's rows and rows without a model).
  std::optional<NcclPick> nccl_pick(const Measurement& row) const;
  // The row's prediction at the machine's own figures, and at `values` (the row must have a model).
  double time_us(const Measurement& row) const;
  double time_us(const Measurement& row, const CalibValues& values) const;
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
  std::optional<NcclPick> nccl;  // NCCL rows
  std::string source;
  std::string model;  // Predictor::model_of
  std::size_t bytes = 0;
  double measured_us = 0;
  double predicted_us = 0;
  double rel_error = 0;   // predicted / measured - 1
  std::string flag;       // "", "outlier", "warm-up", "spike", "held out"
};

struct CalibrationResult {
  int nranks = 0;
  CalibValues before;  // the topology's figures, as priced (priced_values_of)
  CalibValues after;   // fitted (held parameters unchanged)
  std::vector<std::string> fitted;             // parameter names
  // Per parameter (CalibValues order), the standard error of its logarithm: about the relative
  // uncertainty of the fitted value (0 for held ones).
  std::vector<double> uncertainty;
  std::vector<std::string> held;               // "name: why"
  std::vector<RowFit> rows;                    // every modelled row
  std::vector<std::string> not_modelled;       // "SOURCE: why"
  std::vector<std::string> nccl_model;         // "SOURCE: why": NCCL's own time stands in, not fitted
  std::vector<std::string> bounded;            // "name: why": a bandwidth pressed against its line rate
  std::vector<std::string> skipped;            // from the readers
  std::vector<std::string> unread_nccl_env;    // from the readers (MeasurementSet::unread_nccl_env)
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

// A copy of the topology whose derived figures are `values`: links inside hosts scaled to the
// intra figures (in bandwidth those of a kind the routes between host-mates use; in latency
// those on no rank's route to another host, or where that would move a route, every one),
// the others to the inter ones, every rank device reducing at reduce_gbps; every level's routes
// keep their links (calibrate_output.cpp, link_picks). `max_mismatch` (if given) receives the
// largest relative difference between `values` and the copy's derived figures.
topo::Topology apply_calibration(const topo::Topology& topology, int nranks, const CalibValues& values,
                                 double* max_mismatch = nullptr);

// Per figure apply_calibration writes (the latency and bandwidth of each level `written` has,
// the reduction rate): the figure `written` derives and its relative difference from `fitted`
// (a latency's against at least 1e-3 us).
struct WrittenFigure {
  int parameter = 0;  // index as CalibValues::at
  double derived = 0;
  double difference = 0;
};
std::vector<WrittenFigure> written_figures(const topo::Topology& written, int nranks, const CalibValues& fitted);

// The calibrated topology JSON: `topology` with apply_calibration(), and a "calibration" object
// holding the format version, the fitted values, held parameters, source files, and per-row
// residuals (docs/calibration.md).
std::string calibrated_topology_json(const topo::Topology& topology, const CalibrationResult& result);

// The calibrated file against the fit (check_written, compare.hpp): the link and reduction
// figures its links derive that miss the fitted ones by more than 1% (written_figures_mismatch's
// figures, named), and where any does, the fitted rows' error on the file as `compare` prices
// them, which is what the user's next command prints, not the fit's own.
struct WrittenCheck {
  std::vector<std::string> misses;  // "alpha_inter_us 26.55 written for 4 fitted"
  ErrorSummary fitted_rows;         // on the written file; 0 rows where nothing missed
};

// The calibration report as text (one screen) and as JSON; with `written` (calibrate -o), the
// JSON carries it as "written": {"misses", and where any, "fitted_rows_on_file"}.
std::string calibration_text(const CalibrationResult& result);
std::string calibration_json(const CalibrationResult& result, const WrittenCheck* written = nullptr);

}  // namespace colltune::tuner
