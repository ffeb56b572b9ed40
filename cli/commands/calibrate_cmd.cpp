// colltune calibrate: fit the model to measurements and write a calibrated topology.
// colltune compare: measured beside predicted.
// Both read colltune bench --json reports and nccl-tests logs (docs/calibration.md).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/calibrate/calibrate.hpp"
#include "colltune/calibrate/compare.hpp"
#include "colltune/calibrate/measurements.hpp"
#include "commands.hpp"
#include "options/options.hpp"

namespace colltune::cli {
namespace {

using tuner::CalibrateOptions;
using tuner::CalibrationResult;
using tuner::Comparison;
using tuner::MeasurementHints;
using tuner::MeasurementSet;

struct MeasurementArgs {
  std::string topology;
  std::vector<std::string> files;
  MeasurementHints hints;
  JsonOutput json;
};

void add_measurement_options(CLI::App& sub, MeasurementArgs& a, const std::string& what) {
  sub.add_option("files", a.files, "colltune bench --json reports and nccl-tests logs (all_reduce_perf, "
                                   "reduce_scatter_perf, all_gather_perf output)")
      ->required();
  sub.add_option("--topology", a.topology, "The machine measured: preset spec, topology JSON or NCCL XML")
      ->required();
  sub.add_option("--nccl-algo", a.hints.nccl_algo, "NCCL_ALGO of nccl-tests runs whose log does not say it");
  sub.add_option("--nccl-proto", a.hints.nccl_proto, "NCCL_PROTO of nccl-tests runs whose log does not say it");
  sub.add_option("--nccl-env", a.hints.nccl_env,
                 "NCCL's channel settings of the runs, NAME=COUNT (NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, "
                 "NCCL_MIN_CTAS, NCCL_MAX_CTAS), over the log's own; repeatable");
  sub.add_option("--collective", a.hints.collective,
                 "allreduce, reduce_scatter or allgather, for logs without their command line");
  sub.add_option("--ranks", a.hints.nranks, "Rank count, for logs without '#  Rank' lines");
  add_json_option(sub, a.json, what);
}

void run_calibrate(const MeasurementArgs& a, const std::string& out, const std::vector<std::string>& hold,
                   bool holdout) {
  OutputFiles files;  // checked before the fit; written together at the end
  if (!out.empty()) files.file("-o", out);
  a.json.declare(files);
  const topo::Topology topology = topo::load_topology(a.topology);
  const MeasurementSet measurements = tuner::read_measurements(a.files, a.hints);
  CalibrateOptions options;
  for (const std::string& list : hold) {  // --hold a,b and --hold a --hold b alike
    std::size_t start = 0;
    for (std::size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
      options.hold.push_back(list.substr(start, comma - start));
    options.hold.push_back(list.substr(start));
  }
  options.holdout_half = holdout;
  const CalibrationResult result = tuner::calibrate(topology, measurements, options);
  // Everything is computed before anything is written: a failed fit leaves no file.
  std::optional<tuner::WrittenCheck> check;  // the file against the fit, for the JSON and the text alike
  if (!out.empty()) {
    const std::string written = tuner::calibrated_topology_json(topology, result);
    files.stage(out, written);
    check = tuner::check_written(written, result, measurements);
  }
  a.json.finish(a.json.requested() ? tuner::calibration_json(result, check ? &*check : nullptr) : "", files);
  if (!a.json.text_wanted()) return;
  std::cout << tuner::calibration_text(result);
  if (check)
    std::cout << tuner::written_check_text(*check) << "wrote " << out << " (use it as --topology " << out << ")\n";
  else
    std::cout << "no file written: -o FILE writes the calibrated topology\n";
}

bool is_horovod_timeline(const std::string& path) {
  return tuner::measurement_format(read_file(path), path) == tuner::MeasurementFormat::horovod_timeline;
}

struct StepArgs {
  std::string fusion_threshold = "128MiB";  // Horovod's defaults: what the timeline's run used
  std::string cycle_time = "1ms";           // unless told otherwise
};

void run_compare(const MeasurementArgs& a, const std::string& html, const StepArgs& step) {
  OutputFiles files;  // checked before the comparison; written together at the end
  if (!html.empty()) files.file("--html", html);
  a.json.declare(files);
  const topo::Topology topology = topo::load_topology(a.topology);
  const std::size_t fusion = parse_size(step.fusion_threshold, "--fusion-threshold", BareNumber::refused);
  const double cycle = sim::parse_cycle_time_us(step.cycle_time, "--cycle-time");
  const MeasurementSet measurements = tuner::read_measurements(a.files, a.hints);
  const Comparison comparison = tuner::compare_measurements(topology, measurements);
  std::vector<tuner::TimelineComparison> timelines;
  for (const std::string& path : a.files)
    if (is_horovod_timeline(path)) timelines.push_back(tuner::compare_timeline(topology, path, fusion, cycle));
  if (!html.empty()) files.stage(html, tuner::comparison_html(comparison));
  a.json.finish(a.json.requested() ? tuner::comparison_json(comparison) : "", files);
  if (!a.json.text_wanted()) return;
  std::cout << tuner::comparison_text(comparison);
  for (const auto& t : timelines) std::cout << tuner::timeline_comparison_text(t);
  if (!html.empty()) std::cout << "wrote " << html << "\n";
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<MeasurementArgs>();
  auto out = std::make_shared<std::string>();
  auto hold = std::make_shared<std::vector<std::string>>();  // each NAME or NAME,NAME,...
  auto holdout = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "calibrate", "Fit latency, bandwidth and reduction rate per link level to measurements; write a calibrated topology");
  add_measurement_options(*sub, *args, "The fit: values, held parameters, residuals per row");
  sub->add_option("-o,--out", *out, "Calibrated topology JSON to write");
  sub->add_option("--hold", *hold,
                  "Parameters held at the topology's value (alpha_intra_us, intra_gbps, alpha_inter_us, inter_gbps, "
                  "reduce_gbps, ll_efficiency, ll128_efficiency)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_flag("--holdout", *holdout, "Fit every other size of each series; report the error on the others");
  sub->callback([args, out, hold, holdout] { run_calibrate(*args, *out, *hold, *holdout); });
}

void add_compare_command(CLI::App& app) {
  auto args = std::make_shared<MeasurementArgs>();
  auto html = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("compare", "Measured beside predicted, per size and algorithm, with the error");
  add_measurement_options(*sub, *args, "Every row measured and predicted, and the error summaries");
  auto step = std::make_shared<StepArgs>();
  sub->add_option("--html", *html, "A page with both curves per algorithm");
  sub->add_option("--fusion-threshold", step->fusion_threshold,
                  "Horovod timelines: the run's fusion threshold, for the predicted step")
      ->capture_default_str();
  sub->add_option("--cycle-time", step->cycle_time, "Horovod timelines: the run's cycle time")->capture_default_str();
  sub->callback([args, html, step] { run_compare(*args, *html, *step); });
}

}  // namespace colltune::cli
