// The calibrated file against the fit (compare.hpp): the figures the written links derive and
// the fitted rows priced on the file as `compare` and `simulate` price them.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "colltune/calibrate/compare.hpp"
#include "colltune/topology/json_io.hpp"

namespace colltune::tuner {
namespace {

constexpr double kShownMiss = 0.01;  // a written figure this far from the fitted one is named

// "alpha_inter_us 26.55 written for 4 fitted" where the written figure misses the fitted one.
void note_miss(std::vector<std::string>& out, const std::string& name, double written, double fitted) {
  if (!(std::abs(written - fitted) > kShownMiss * std::max(std::abs(fitted), 1e-9))) return;
  char line[160];
  std::snprintf(line, sizeof line, "%s %.4g written for %.4g fitted", name.c_str(), written, fitted);
  out.emplace_back(line);
}

}  // namespace

WrittenCheck check_written(const topo::Topology& topology, const CalibrationResult& result,
                           const MeasurementSet& measurements) {
  WrittenCheck w;
  const topo::Topology written =
      topo::topology_from_json(calibrated_topology_json(topology, result), "the calibrated file");
  const CalibValues d = values_of(written, result.nranks);
  const auto& names = calibration_parameter_names();
  // The levels the file has routes for (rank 0 and a host-mate; rank 0 and another host), as
  // apply_calibration writes them; the efficiencies are written as fitted.
  bool intra = false, inter = false;
  for (int r = 1; r < result.nranks; ++r) (written.host_of_rank(r) == written.host_of_rank(0) ? intra : inter) = true;
  std::vector<int> written_figures{4};  // reduce_gbps
  if (intra) written_figures.insert(written_figures.end(), {0, 1});
  if (inter) written_figures.insert(written_figures.end(), {2, 3});
  std::sort(written_figures.begin(), written_figures.end());
  for (int p : written_figures) note_miss(w.misses, names[static_cast<std::size_t>(p)], d.at(p), result.after.at(p));
  if (w.misses.empty()) return w;
  std::vector<std::string> fitted;
  for (const RowFit& r : result.rows)
    if (r.flag.empty()) fitted.push_back(r.source);
  std::vector<double> errors;
  for (const RowFit& r : compare_measurements(written, measurements).rows)
    if (std::find(fitted.begin(), fitted.end(), r.source) != fitted.end()) errors.push_back(std::abs(r.rel_error));
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
