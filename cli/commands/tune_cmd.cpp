// colltune tune: search fusion threshold, cycle time, fp16, algorithm, chunking and
// hierarchical allreduce for a model on a topology; write the output files
// (tuner::output_files) atomically.
#include <unistd.h>

#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/compute_source.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/timeline.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/hardware.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/emit.hpp"
#include "colltune/tuner/measured.hpp"
#include "colltune/tuner/tuner.hpp"
#include "commands.hpp"
#include "commands/simulate_nccl.hpp"
#include "options/compute_option.hpp"
#include "options/cost_option.hpp"
#include "options/options.hpp"

#ifdef COLLTUNE_HAVE_MPI
#include "colltune/collectives/mpi.hpp"
#endif

namespace colltune::cli {
namespace {

struct TuneArgs {
  std::string topology;
  std::string model;
  std::string out;
  std::string objective = "analytic";
  std::string runtime = "horovod";
  std::string strategy;  // default: grid for analytic, bayes otherwise
  std::size_t budget = 0;
  std::uint64_t seed = 1;
  std::vector<std::string> fixes;
  std::vector<std::string> costs;  // --cost NAME=VALUE
  ComputeArgs compute;             // --precision, --measured-throughput
  double max_fp16_error = tuner::kDefaultMaxFp16Error;
  std::string nccl_margin = "5%";  // --nccl-margin
  NcclSimulateOptions nccl;        // --nccl-algo, --nccl-proto, --nccl-env: the user's NCCL settings
  JsonOutput json;
};

// --nccl-margin 5% or 0.05: a fraction in [0, 1).
double nccl_margin(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string_view number = std::string_view(text).substr(0, text.size() - (percent ? 1 : 0));
  const double scale = percent ? 100 : 1;
  return parse::number(number, "--nccl-margin", parse::Bounds{0, scale, false, true}) / scale;
}

// "[#########...........] 1234/3600  best 41.2 ms" on stderr, redrawn in place, ~100 updates.
auto progress_bar() {
  return [last = std::size_t{0}](std::size_t done, std::size_t total, const tuner::Evaluation& best) mutable {
    if (total == 0 || (done != total && done * 100 / total == last * 100 / total && done > 1)) return;
    last = done;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / total);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu  best %s", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(), done, total,
                 format_time_us(best.step_time_us).c_str());
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

// Where stderr is not a terminal (a log, CI): one line every few seconds, so a long tune (the
// measured objective, a large grid) says where it is. Prefixed so logs can filter it.
auto progress_lines() {
  using Clock = std::chrono::steady_clock;
  static constexpr auto kEvery = std::chrono::seconds(5);
  return [next = Clock::now() + kEvery](std::size_t done, std::size_t total, const tuner::Evaluation& best) mutable {
    if (Clock::now() < next || done == total) return;
    next = Clock::now() + kEvery;
    std::fprintf(stderr, "colltune: progress: tune %zu/%zu evaluated, best %s\n", done, total,
                 format_time_us(best.step_time_us).c_str());
    std::fflush(stderr);
  };
}

// The mean step period a Horovod timeline measured (two steps at least); nullopt for any other
// model (a profile, a workload JSON).
std::optional<double> measured_step_us(const std::string& model) {
  if (!std::filesystem::is_regular_file(model)) return std::nullopt;
  sim::TimelineImport run;
  try {
    run = sim::import_horovod_timeline(model);
  } catch (const Error&) {
    return std::nullopt;  // not a timeline: load_workload read it as a workload
  }
  const auto& starts = run.step_starts_us;
  if (starts.size() < 2) return std::nullopt;
  return (starts.back() - starts.front()) / static_cast<double>(starts.size() - 1);
}

void print_summary(const tuner::TuneResult& r, const std::vector<std::filesystem::path>& files,
                   std::optional<double> measured_us) {
  const auto& c = r.best.candidate;
  std::cout << "tuned " << r.model << " on " << r.topology << " (" << r.ranks << " ranks) for "
            << coll::to_string(r.runtime) << ": " << r.history.size() << " configurations, objective " << r.objective << ", strategy " << tuner::to_string(r.strategy) << "\n"
            << "  fusion threshold   " << format_bytes(c.fusion_threshold_bytes) << "\n"
            << "  cycle time         " << format_time_us(c.cycle_time_us) << "\n"
            << "  fp16 compression   " << (c.fp16 ? "on" : "off") << " (predicted rms relative error "
            << format_ratio(r.fp16.relative_error) << ", limit " << format_ratio(r.fp16.max_allowed) << ")\n"
            << "  algorithm          " << c.algorithm << (c.hierarchical ? " (hierarchical)" : "")
            << ", chunk " << format_bytes(c.chunk_bytes) << "\n"
            << "  hierarchical flag  " << (r.hierarchical_allreduce ? "on" : "off") << " (Horovod's global flag)\n"
            << "  step time          " << format_time_us(r.best.step_time_us) << " vs "
            << format_time_us(r.baseline.step_time_us) << " with the baseline: speedup " << format_ratio(r.speedup())
            << "x\n"
            << "  baseline           " << r.baseline_description << "\n"
            << "  compute from       " << r.compute << "\n";
  if (r.allreduce_step_us > 0)
    std::cout << "  allreduce instead  " << format_time_us(r.allreduce_step_us)
              << " at Horovod's defaults with NCCL's choice; the tuned PS step takes x"
              << format_ratio(r.best.step_time_us / r.allreduce_step_us) << " of it\n";
  // Tuning over what was measured, not over hypothetical defaults.
  if (measured_us)
    std::cout << "  measured run       " << format_time_us(*measured_us) << " per step in the timeline: tuned "
              << format_time_us(r.best.step_time_us) << " predicted, x" << format_ratio(*measured_us / r.best.step_time_us)
              << " over the measured run (baseline predicted " << format_time_us(r.baseline.step_time_us) << ")\n";
  for (const auto& f : files) std::cout << "  wrote " << f.string() << "\n";
}

// The measured objective runs on the ranks of this MPI job, which --topology must describe.
std::unique_ptr<tuner::Objective> make_measured(const TuneArgs& a, const topo::Topology& topology,
                                                const sim::Workload& workload) {
  if (tuner::mpi_world_size() != topology.num_ranks())
    throw Error("--objective measured: " + std::to_string(tuner::mpi_world_size()) + " MPI ranks but --topology " +
                a.topology + " has " + std::to_string(topology.num_ranks()) + "; describe the machine it runs on");
  tuner::MeasuredOptions measured;
  tuner::AlgoTableOptions table;
  table.algorithms = tuner::RuntimeModel(topology, coll::Runtime::colltune, false).flat_algorithms();
  const sim::CostModel model(topology);
  measured.auto_table = tuner::build_algo_table(model, table);
  table.hierarchical = false;
  measured.auto_table_flat = tuner::build_algo_table(model, table);
  return tuner::make_measured_objective(workload, measured);
}

tuner::TuneOptions tune_options(const TuneArgs& a) {
  if (a.out.empty()) throw Error("--out: an output directory is required");
  tuner::TuneOptions options;
  options.strategy = tuner::parse_strategy(a.strategy.empty() ? (a.objective == "analytic" ? "grid" : "bayes")
                                                               : a.strategy);
  if (a.budget > limits::kMaxTuneBudget)
    limits::exceeded("--budget " + std::to_string(a.budget), std::to_string(limits::kMaxTuneBudget) + " evaluations",
                     limits::kMaxTuneBudgetReason);
  if (!(a.max_fp16_error >= 0) || !std::isfinite(a.max_fp16_error))
    throw Error("--max-fp16-error " + std::to_string(a.max_fp16_error) + ": expected a finite number >= 0");
  options.budget = a.budget;
  options.seed = a.seed;
  options.fixes = a.fixes;
  options.max_fp16_error = a.max_fp16_error;
  const coll::Runtime runtime = tuner::parse_runtime_spec(a.runtime).runtime;  // --fix: tune() checks it before any work
  if (a.objective != "analytic" && a.objective != "event" && a.objective != "measured")
    throw Error("--objective " + a.objective + ": unknown (expected analytic, event or measured)");
  step_costs(a.costs);  // a bad --cost is an error before any work
  nccl_margin(a.nccl_margin);
  if (a.objective == "measured" && !a.costs.empty())
    throw Error("--cost " + a.costs.front() + ": --objective measured times real steps; the step model's costs do "
                "not apply");
  if (a.objective == "measured" && runtime != coll::Runtime::colltune)
    throw Error("--objective measured runs colltune's executors: it needs --runtime colltune (got --runtime " +
                a.runtime + ")");
  return options;
}

// `nccl`: the user's NCCL settings, checked on `topology` (nccl_settings).
void tune_and_write(const TuneArgs& a, tuner::TuneOptions options, const topo::Topology& topology,
                    const sim::LoadedWorkload& loaded, const sim::NcclOptions& nccl = {}) {
  const sim::Workload& workload = loaded.workload;
  std::unique_ptr<tuner::Objective> objective;
  if (a.objective == "measured")
    objective = make_measured(a, topology, workload);
  else
    objective = std::make_unique<tuner::SimulatedObjective>(topology, workload, sim::parse_engine(a.objective),
                                                            tuner::parse_runtime_spec(a.runtime), step_costs(a.costs),
                                                            nccl_margin(a.nccl_margin), nccl);
  const bool leader = tuner::mpi_world_rank() == 0;
  OutputFiles outputs;  // the leader's: --out's files and --json FILE, checked before the search
  if (leader) {
    outputs.directory("--out", a.out, tuner::emitted_file_names());
    a.json.declare(outputs);
  }
  if (leader && isatty(STDERR_FILENO)) {
    options.progress = progress_bar();
  } else if (leader) {
    options.progress = progress_lines();
  }
  tuner::TuneResult result = tuner::tune(topology, workload, *objective, options);
  result.compute = loaded.compute;
  if (!leader) return;
  std::vector<std::filesystem::path> files;
  for (auto& [name, content] : tuner::render_configs(a.out, result)) {
    files.push_back(std::filesystem::path(a.out) / name);
    outputs.stage_in_directory(name, std::move(content));
  }
  a.json.finish(a.json.requested() ? tuner::summary_json(result, files) : "", outputs);
  if (a.json.text_wanted()) print_summary(result, files, measured_step_us(a.model));
}

void run_tune(const TuneArgs& a) {
  const tuner::TuneOptions options = tune_options(a);
  const topo::Topology topology = topo::load_topology(a.topology);
  if (has_nccl_settings(a.nccl) &&
      (a.objective == "measured" || tuner::parse_runtime_spec(a.runtime).runtime == coll::Runtime::ps))
    throw Error(std::string(a.objective == "measured" ? "--objective measured runs colltune's executors"
                                                      : "--runtime " + a.runtime + " runs no NCCL allreduce") +
                ": NCCL's settings (--nccl-algo, --nccl-proto, --nccl-env) do not apply");
  const sim::NcclOptions nccl = nccl_settings(topology, a.nccl);  // a bad setting: an error before any work
  // A profile's layers are timed on the topology's GPU, as `colltune step` times them.
  const sim::LoadedWorkload workload =
      sim::load_workload(a.model, compute_request(a.compute, topo::gpu_of(topology).name));
  if (a.objective != "measured") return tune_and_write(a, options, topology, workload, nccl);
#ifdef COLLTUNE_HAVE_MPI
  // An error while MPI is up ends the job with MPI_Abort (MpiSession), before main() could print
  // it: print it here first.
  coll::MpiSession mpi(nullptr, nullptr);
  try {
    tune_and_write(a, options, topology, workload);
  } catch (const std::exception& e) {
    std::cerr << "colltune: error: " << e.what() << "\n";
    throw;
  }
#else
  tuner::make_measured_objective(workload.workload, {});  // throws: this build has no MPI transport
#endif
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand("tune", "Search Horovod/NCCL settings for a model on a topology and write " +
                                                 tuner::emitted_file_list());
  cmd->add_option("--topology", args->topology, "preset spec, topology JSON or NCCL XML")->required();
  cmd->add_option("--model", args->model, "built-in model profile (resnet50, vgg16, bert-large, gpt2-xl) or workload "
                                          "JSON")->required();
  cmd->add_option("--out", args->out, "directory for the output files (created if missing)")->required();
  cmd->add_option("--objective", args->objective, "analytic | event | measured (under mpirun; --runtime colltune)");
  cmd->add_option("--runtime", args->runtime, "what runs the job: horovod (Horovod over NCCL, default) | nccl (NCCL "
                                              "alone) | colltune (colltune's executors) | ps:servers=S[,colocated][,agg_gbps=X] (parameter "
                                              "servers: emits colltune.json and report.html only)");
  cmd->add_option("--strategy", args->strategy, "grid | bayes | random (default: grid for analytic, else bayes)");
  cmd->add_option("--budget", args->budget, "evaluations for bayes/random (default 30)")->check(at_least(1));
  cmd->add_option("--seed", args->seed, "random seed (bayes/random)");
  std::string knobs;
  for (const auto& k : tuner::knob_names()) knobs += (knobs.empty() ? "" : ", ") + k;
  cmd->add_option("--fix", args->fixes, "pin a knob=value (knobs: " + knobs + "), e.g. fusion-threshold=64MiB, "
                                        "cycle-time=5ms, fp16=on, algorithm=nccl|auto|ring|..., hierarchical=off (sizes "
                                        "and times need a unit; the runtime limits the values)")
      ->take_all();
  cmd->add_option("--max-fp16-error", args->max_fp16_error,
                  "accept fp16 compression only when its predicted rms relative error is at most this (default 0.01)");
  add_compute_options(*cmd, args->compute);
  cmd->add_option("--nccl-margin", args->nccl_margin,
                  "on a calibrated topology, override NCCL's own algorithm/protocol pick (plugin rows) where another "
                  "is predicted faster by more than this")
      ->capture_default_str();
  add_nccl_setting_options(*cmd, args->nccl);
  add_step_cost_option(*cmd, args->costs);
  add_json_option(*cmd, args->json, "The summary");
  cmd->callback([args] { run_tune(*args); });
}

}  // namespace colltune::cli
