// Fuzz entry points for what the commands compute from what they accepted (fuzz_targets.hpp):
// calibrate's fit and compare's prediction from measurement files, the step priced with
// `--cost` and the what-if options (--cycle-time, --slow, --jitter, --batches/--uneven/
// --uneven-spread, --fail and its costs), and sweep's --vary points. Each input goes through
// the parse functions the CLI calls; an accepted input is then computed on a small preset and
// every number is checked finite and >= 0 (finite::InternalError otherwise, which the replay
// reports as a failure).
#include "fuzz_commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "colltune/calibrate/calibrate.hpp"
#include "colltune/calibrate/compare.hpp"
#include "colltune/calibrate/measurements.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/finite.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/failures.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/sim/step_costs.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/stragglers.hpp"
#include "colltune/sim/uneven.hpp"
#include "colltune/topology/presets.hpp"
#include "colltune/tuner/sweep.hpp"

namespace colltune::fuzz {
namespace {

// Bounds the fuzzer keeps to stay CI-sized (the CLI's own limits are larger): simulated jitter
// steps, run steps and batches per rank.
constexpr long kMaxSteps = 50;
constexpr long kMaxBatches = 100000;

std::vector<std::string> lines(std::string_view input) {
  std::vector<std::string> out;
  std::istringstream in{std::string(input)};
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// The machine measurements with `nranks` ranks ran on, among small presets (nullopt: none).
// A PCIe box up to 8 GPUs (NCCL's model describes it and a fit takes milliseconds; a fit on a
// multi-node DGX takes seconds, too slow per input), else a flat machine (colltune's rows).
std::optional<topo::Topology> machine_for(int nranks) {
  if (nranks >= 2 && nranks <= 8) return topo::make_preset("pcie-box:gpus=" + std::to_string(nranks));
  if (nranks > 8 && nranks <= 64) return topo::make_preset("flat:ranks=" + std::to_string(nranks));
  return std::nullopt;
}

void fit_oracle(const tuner::RowFit& row) {
  expect_finite(row.measured_us, row.source + " measured_us");
  expect_finite(row.predicted_us, row.source + " predicted_us");
  if (!std::isfinite(row.rel_error)) throw finite::InternalError("fuzz oracle: " + row.source + " rel_error not finite");
}

// calibrate and compare on the measurements, as the commands run them.
void calibrate_and_compare(const tuner::MeasurementSet& set) {
  if (set.rows.empty()) return;
  const std::optional<topo::Topology> machine = machine_for(set.rows.front().nranks);
  if (!machine) return;
  try {
    const tuner::Comparison c = tuner::compare_measurements(*machine, set);
    for (const tuner::RowFit& row : c.rows) fit_oracle(row);
    (void)tuner::comparison_json(c);
  } catch (const Error&) {
  }
  const tuner::CalibrationResult r = tuner::calibrate(*machine, set);
  for (int i = 0; i < tuner::CalibValues::kCount; ++i) expect_finite(r.after.at(i), "calibrated parameter");
  for (const tuner::RowFit& row : r.rows) fit_oracle(row);
  (void)tuner::calibrated_topology_json(*machine, r);
  (void)tuner::calibration_json(r);
}

void calibrate_nccl_tests_log(std::string_view input) {
  calibrate_and_compare(tuner::parse_nccl_tests_log(std::string(input), "fuzz.txt"));
}
void calibrate_bench_json(std::string_view input) {
  calibrate_and_compare(tuner::parse_bench_json(std::string(input), "fuzz.json"));
}

// compare's timeline path reads a file: the input goes to one in the temporary folder.
void compare_horovod_timeline(std::string_view input) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("colltune-fuzz-timeline-" + std::to_string(::getpid()) + ".json"))
          .string();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << input;
  static const topo::Topology machine = topo::make_preset("dgx-h100:nodes=2");
  const tuner::TimelineComparison c = tuner::compare_timeline(machine, path, 64u << 20, 1000.0);
  expect_finite(c.predicted_step_us, "timeline predicted_step_us");
  for (const auto& part : c.parts) expect_finite(part.measured_us, "timeline part " + part.name);
  expect_finite(c.model_copy_gbps, "model_copy_gbps");
}

// The what-if inputs, one "KEY VALUE" per line (cost, cycle, slow, jitter, steps, batches,
// uneven, spread, fail, run_steps, storage, state, detect), parsed as step's options are.
struct WhatIf {
  sim::StepCosts costs;
  sim::StepConfig config;
  sim::StragglerOptions stragglers;
  long batches = -1;  // < 0: no uneven data
  std::vector<std::string> uneven;
  std::string spread;
  sim::FailureOptions failures;
  std::vector<std::string> fail;
};

void parse_whatif_line(WhatIf& w, const topo::Topology& machine, const std::string& line) {
  const std::size_t space = line.find(' ');
  const std::string key = line.substr(0, space), value = space == std::string::npos ? "" : line.substr(space + 1);
  if (key == "cost") sim::set_step_cost(w.costs, value);
  else if (key == "cycle") w.config.cycle_time_us = sim::parse_cycle_time_us(value, "--cycle-time");
  else if (key == "slow") sim::apply_slow(value, machine, w.stragglers.rank_factor);
  else if (key == "jitter") w.stragglers.jitter = sim::parse_jitter(value);
  else if (key == "steps") w.stragglers.steps = static_cast<int>(parse::integer<long>(value, "--steps", 1, kMaxSteps));
  else if (key == "batches") w.batches = parse::integer<long>(value, "--batches", 0, kMaxBatches);
  else if (key == "uneven") w.uneven.push_back(value);
  else if (key == "spread") w.spread = value;
  else if (key == "fail") w.fail.push_back(value);
  else if (key == "run_steps") w.failures.run_steps = parse::integer<long>(value, "--run-steps", 1, kMaxSteps);
  else if (key == "storage") w.failures.storage_gbps = parse::rate_gbps(value, "--storage-gbps");
  else if (key == "state") w.failures.state_bytes = static_cast<double>(parse_size(value, "--state-size", BareNumber::refused));
  else if (key == "detect") w.failures.detect_s = parse_time_us(value, "--detect-timeout") / 1e6;
  else throw Error("unknown what-if key '" + key + "'");
}

void check_uneven(const sim::UnevenResult& u) {
  for (double v : {u.epoch_us, u.even_epoch_us, u.idle_fraction}) expect_finite(v, "uneven");
  if (!std::isfinite(u.loss_us)) throw finite::InternalError("fuzz oracle: uneven loss_us not finite");
}

void check_recovery(const sim::Recovery& r, const std::string& what) {
  for (double v : {r.run_s, r.lost_s, r.samples, r.throughput}) expect_finite(v, what);
}

void step_whatif(std::string_view input) {
  static const topo::Topology machine = topo::make_preset("dgx-h100:nodes=2");
  static const sim::Workload workload = sim::parse_profile_spec("resnet50");
  WhatIf w;
  w.stragglers.rank_factor.assign(static_cast<std::size_t>(machine.num_ranks()), 1.0);
  for (const std::string& line : lines(input)) parse_whatif_line(w, machine, line);
  const sim::StepSimulator simulator(machine, w.costs);
  const sim::StepResult step = simulator.run(workload, w.config);
  for (double v : {step.step_time_us, step.compute_us, step.exposed_comm_us}) expect_finite(v, "step");
  const sim::StragglerResult s =
      sim::simulate_stragglers(simulator, workload, w.config, sim::Engine::analytic, w.stragglers);
  for (double v : {s.ideal_us, s.mean_us, s.p50_us, s.p99_us, s.waiting_fraction}) expect_finite(v, "stragglers");
  if (w.batches >= 0 || !w.uneven.empty() || !w.spread.empty()) {
    const long batches = w.batches < 0 ? 1000 : w.batches;
    std::vector<long> counts = w.spread.empty()
                                   ? std::vector<long>(static_cast<std::size_t>(machine.num_ranks()), batches)
                                   : sim::spread_batches(batches, w.spread, machine.num_ranks(), 1);
    for (const std::string& u : w.uneven) sim::apply_uneven(u, machine, counts);
    for (long& c : counts) c = std::min(c, kMaxBatches);
    check_uneven(sim::simulate_uneven(simulator, workload, w.config, sim::Engine::analytic, counts,
                                      w.stragglers.rank_factor));
  }
  if (w.fail.empty() || w.failures.run_steps < 1) return;
  for (const std::string& f : w.fail) w.failures.failures.push_back(sim::parse_failure(f, machine, w.failures.run_steps));
  w.failures.rank_factor = w.stragglers.rank_factor;
  const sim::FailureResult f =
      sim::simulate_failures(machine, w.costs, workload, w.config, sim::Engine::analytic, w.failures);
  for (double v : {f.step_us, f.checkpoint_write_s, f.checkpoint_read_s, f.baseline_s, f.baseline_throughput})
    expect_finite(v, "failures");
  check_recovery(f.elastic, "elastic");
  check_recovery(f.checkpoint, "checkpoint");
  check_recovery(f.nothing, "nothing");
}

// sweep --vary: each line an axis; every point's topology spec is built (and priced, as the
// preset reader's oracle does) and its model spec read. At most two axes, as sweep takes.
void sweep_vary(std::string_view input) {
  std::vector<tuner::SweepAxis> axes;
  for (const std::string& line : lines(input)) {
    axes.push_back(tuner::parse_sweep_axis(line));
    if (axes.size() == 2) break;
  }
  if (axes.empty()) return;
  const auto points = tuner::sweep_points(axes);
  for (std::size_t i = 0; i < points.size() && i < 4; ++i) {
    const std::string topology = tuner::sweep_topology_spec("dgx-h100", axes, points[i]);
    const std::string model = tuner::sweep_model_spec("resnet50", axes, points[i]);
    if (!topo::is_preset_spec(topology) || !sim::is_profile_spec(model)) continue;
    const topo::Topology machine = topo::make_preset(topology);
    if (machine.num_ranks() > 64) continue;
    const sim::StepResult r = sim::StepSimulator(machine).run(sim::parse_profile_spec(model), sim::StepConfig{});
    expect_finite(r.step_time_us, "sweep point step_time_us");
  }
}

}  // namespace

void add_command_targets(std::vector<Target>& all) {
  all.push_back({"calibrate_nccl_tests_log", calibrate_nccl_tests_log,
                 {"#", "\n", " ", "1e308", "0", "-1", "N/A", "float", "half", "sum", "  8  ", "1048576", "0.001"},
                 1000});
  all.push_back({"calibrate_bench_json", calibrate_bench_json,
                 {"{", "}", "[", "]", ",", "\"rows\"", "\"time_us\"", "\"size_bytes\"", "\"nranks\"", "0", "1e308", "-1"},
                 1000});
  all.push_back({"compare_horovod_timeline", compare_horovod_timeline,
                 {"{", "}", "[", "]", ",", "\"ph\"", "\"B\"", "\"E\"", "\"ts\"", "\"NCCL_ALLREDUCE\"",
                  "\"MEMCPY_IN_FUSION_BUFFER\"", "\"shape\"", "1e400", "-1", "0"},
                 1000});
  all.push_back({"step_whatif", step_whatif,
                 {"\n", "cost ", "cycle ", "slow ", "jitter ", "steps ", "batches ", "uneven ", "spread ", "fail ",
                  "run_steps ", "storage ", "state ", "detect ", "fusion_copy_gbps=", "interference=",
                  "lognormal:", "uniform:", "normal:", "node1", ":", "x", "%", "5e-324", "1e-320", "1e308", "0",
                  "-1", "us", "GB/s", "KiB"}});
  all.push_back({"sweep_vary", sweep_vary,
                 {"\n", "=", ",", "nodes", "ranks", "batch", "model", "topology", "runtime", "1", "0", "-1",
                  "99999999", "resnet50", "vgg16", "flat:ranks=2", "1e308"},
                 1500});
}

}  // namespace colltune::fuzz
