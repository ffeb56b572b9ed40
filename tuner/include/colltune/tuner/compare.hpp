#pragma once
// Measured beside predicted (colltune compare, docs/calibration.md): every measured row with
// colltune's prediction for it on a topology (calibrated or not), the relative error, and a
// summary per model and overall. The same predictor as calibration (calibrate.hpp).
#include <map>
#include <string>
#include <vector>

#include "colltune/topology/topology.hpp"
#include "colltune/tuner/calibrate.hpp"
#include "colltune/tuner/measurements.hpp"

namespace colltune::tuner {

struct ErrorSummary {
  std::size_t rows = 0;
  double median_abs = 0;  // of |predicted / measured - 1|
  double max_abs = 0;
};

struct Comparison {
  std::string topology;
  int nranks = 0;
  std::vector<RowFit> rows;  // flag empty
  std::map<std::string, ErrorSummary> by_model;
  ErrorSummary overall;
  std::vector<std::string> not_modelled;  // "SOURCE: why"
  std::vector<std::string> skipped;
};

// Throws colltune::Error for measurements whose rank count is not the topology's, or when no
// row has a model.
Comparison compare_measurements(const topo::Topology& topology, const MeasurementSet& measurements);

std::string comparison_text(const Comparison& c);
std::string comparison_json(const Comparison& c);
// A self-contained page: per model, measured and predicted time against size (log-log), and
// the table.
std::string comparison_html(const Comparison& c);

}  // namespace colltune::tuner
