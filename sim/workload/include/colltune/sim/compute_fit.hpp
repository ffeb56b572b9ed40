#pragma once
// The fit of the step model's achieved fractions (profiles.hpp) to published single-GPU
// training throughput (sim/workload/data/published_throughput.csv, sources in its SOURCES.md).
//
// Model: one GPU trains at samples/s = 1 / (3 x forward time per sample), the forward time
// being each kind's work over its rate: convolution and matmul FLOPs / (peak at the precision x
// fraction), memory-bound elements x activation bytes / (memory bandwidth x fraction). Time is
// linear in the unknowns x = 1 / fraction, so the fit is a linear least squares in x on
// relative time errors ((predicted - published) / published per row), with bounds:
//  1. Pooled: a convolution, a matmul and a memory fraction per precision class (fp32, tf32,
//     amp), shared by every GPU, fitted to all fitted rows.
//  2. Per GPU: each GPU's own three fractions per class, fitted to that GPU's rows plus a
//     penalty sqrt(shrinkage) x (x / pooled - 1) per unknown, which pulls a fraction its rows do
//     not pin down to the pooled one (a GPU without rows gets exactly the pooled fractions).
// The memory fraction is an effective one: the profiles count only the norms' activation bytes,
// so it also prices the element-wise work they leave out (activations, residual adds, the
// norms' extra passes), and it differs by precision.
// Bounds: matmul, memory and tensor-core convolution fractions at most 1; fp32 convolutions at
// most 2.25, since cuDNN's Winograd F(2x2,3x3) convolutions do 2.25x fewer multiplies than the
// direct count the profiles use.
// Validation, then the fit colltune ships: a first fit holds out every `hold_out_every`-th
// fitted row (file order: the 3rd, 6th, ...) and predicts them (the held-out error); the
// fractions colltune uses are then fitted to every row marked "fit". Rows not marked "fit"
// (Horovod's baselines, duplicates, ...) are predicted where they can be, never fitted.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/sim/profiles.hpp"

namespace colltune::sim {

struct PublishedRow {
  int id = 0;
  std::string model;        // a profile spec ("bert-large:seq=384,head=squad"); "" when not a built-in model
  std::string gpu;          // a hardware-table name; "" when the table has no row for the GPU
  std::string precision;    // fp32 | tf32 | amp
  double samples_per_s = 0; // images or sequences per second on one GPU; 0 when not a throughput
  std::string use;          // "fit", or why the row is not fitted ("horovod: ...", "duplicate: ...")
  std::string source_url;
};

// Throws colltune::Error naming the file, row and column for a malformed table (a missing
// column, a bad number, an unknown GPU or precision, a model spec that does not parse).
std::vector<PublishedRow> parse_published_throughput(std::string_view csv_text, std::string_view source);
std::vector<PublishedRow> load_published_throughput(const std::filesystem::path& csv);

struct FitOptions {
  double shrinkage = 0.1;      // penalty weight pulling a GPU's fractions to the pooled ones
  double fp32_conv_max = 2.25; // Winograd F(2x2,3x3)
  int hold_out_every = 3;
};

enum class FitRole { fit, compared, unused };
std::string_view to_string(FitRole role);

struct RowResult {
  PublishedRow row;
  FitRole role = FitRole::unused;
  bool held_out = false;           // left out of the validation fit
  double predicted = 0;            // samples/s with the shipped fractions (0: cannot be predicted)
  double held_out_predicted = 0;   // held-out rows: samples/s with the validation fit's fractions
  double error() const { return predicted / row.samples_per_s - 1; }
  double held_out_error() const { return held_out_predicted / row.samples_per_s - 1; }
};

struct ErrorStats {
  int rows = 0;
  double median = 0;  // of |error|
  double max = 0;
  int within_15 = 0;  // rows with |error| <= 15 %
};

struct FractionEntry {
  std::string gpu;        // a hardware-table name, or "pooled"
  std::string precision;  // fp32 | tf32 | amp (fraction_class)
  AchievedFractions fractions;
};

struct FitResult {
  std::vector<FractionEntry> fractions;  // shipped: pooled first, then every GPU of the hardware table
  std::vector<RowResult> rows;           // in the table's order
  ErrorStats fit;       // the fitted rows, by the shipped fractions
  ErrorStats held_out;  // the held-out rows, by the validation fit that did not see them
  ErrorStats compared;  // rows never fitted, by the shipped fractions
};

FitResult fit_achieved_fractions(const std::vector<PublishedRow>& rows, const FitOptions& options = {});

// The fractions table compute_rates reads (gpu,precision,convolution,matmul,memory,rows), to
// 4 significant digits.
std::string fractions_csv(const FitResult& fit);
// One line per predicted row: id, model, gpu, precision, role, held_out, published, predicted,
// error %, and for held-out rows the validation fit's prediction and error %.
std::string residuals_csv(const FitResult& fit);
// The error summary docs/step-model.md quotes: one line each for the fitted, held-out and
// compared rows, e.g. "held-out rows: 33, median error 12.3 %, max 45.6 %, 20 within 15 %".
std::string fit_summary(const FitResult& fit);

// The predicted single-GPU throughput of a row's model at `fractions` (what the step model
// computes for it): 1e6 / (3 x forward us per sample).
double predicted_samples_per_s(const PublishedRow& row, const AchievedFractions& fractions);

}  // namespace colltune::sim
