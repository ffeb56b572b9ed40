// The calibrated file against the fit (compare.hpp): the figures the written links derive and
// the fitted rows priced on the file as `compare` and `simulate` price them.
#include <cmath>
#include <cstdio>
#include <set>

#include "colltune/calibrate/compare.hpp"
#include "colltune/topology/json_io.hpp"

namespace colltune::tuner {
namespace {

constexpr double kShownMiss = 0.01;  // a written figure this far from the fitted one is named

}  // namespace

WrittenCheck check_written(const std::string& written_json, const CalibrationResult& result,
                           const MeasurementSet& measurements) {
  WrittenCheck w;
  const topo::Topology written = topo::topology_from_json(written_json, "the calibrated file");
  const auto& names = calibration_parameter_names();
  for (const WrittenFigure& f : written_figures(written, result.nranks, result.after)) {
    if (!(f.difference > kShownMiss)) continue;
    char line[160];
    std::snprintf(line, sizeof line, "%s %.4g written for %.4g fitted",
                  names[static_cast<std::size_t>(f.parameter)].c_str(), f.derived, result.after.at(f.parameter));
    w.misses.emplace_back(line);
  }
  if (w.misses.empty()) return w;
  std::set<std::string> fitted;
  for (const RowFit& r : result.rows)
    if (r.flag.empty()) fitted.insert(r.source);
  std::vector<double> errors;
  for (const RowFit& r : compare_measurements(written, measurements).rows)
    if (fitted.count(r.source) > 0) errors.push_back(std::abs(r.rel_error));
  w.fitted_rows = summarize_errors(errors);
  return w;
}

std::string written_check_text(const WrittenCheck& w) {
  if (w.misses.empty()) return {};
  std::string misses;
  for (const std::string& m : w.misses) misses += (misses.empty() ? "" : ", ") + m;
  char errors[160];
  std::snprintf(errors, sizeof errors, "median %.1f%%, max %.1f%%", 100 * w.fitted_rows.median_abs,
                100 * w.fitted_rows.max_abs);
  return "written: the file's links cannot carry every fitted figure (" + misses +
         "; links inside a host lie on the routes of both levels); on the file, as compare and simulate "
         "price it, the fitted rows' error is " +
         errors + "\n";
}

}  // namespace colltune::tuner
