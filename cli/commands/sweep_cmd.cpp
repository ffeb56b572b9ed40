// colltune sweep --topology SPEC --model M --vary KEY=V1,V2,... [--vary ...] [--out DIR]: one or
// two things varied, each point at Horovod's defaults and tuned (tuner/sweep.hpp); with --bytes
// instead of --model, an allreduce's bus bandwidth against size on each topology
// (tuner/size_sweep.hpp).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/tuner/size_sweep.hpp"
#include "colltune/tuner/sweep.hpp"
#include "commands.hpp"
#include "commands/simulate_nccl.hpp"
#include "options/compute_option.hpp"
#include "options/cost_option.hpp"
#include "options/options.hpp"

namespace colltune::cli {
namespace {

struct SweepArgs {
  std::string topology;
  std::string model;
  std::vector<std::string> vary;
  std::vector<std::string> fixes;
  std::vector<std::string> costs;  // --cost NAME=VALUE
  ComputeArgs compute;             // --precision, --measured-throughput
  std::string runtime;  // empty: horovod
  std::string bytes;    // --bytes: a message-size sweep instead of a training step
  std::string algo;     // --bytes only: nccl (default) or a registry allreduce
  NcclSimulateOptions nccl;  // --nccl-algo, --nccl-proto, --nccl-env: the user's NCCL settings
  std::string out;
  JsonOutput json;
};

// One line per point on standard error, also when it is not a terminal: a long sweep says
// where it is.
void report_progress(const tuner::SweepSpec& spec, std::size_t done, std::size_t total, const tuner::SweepPoint& p) {
  std::string values;
  for (std::size_t a = 0; a < p.values.size(); ++a)
    values += (a ? ", " : "") + spec.axes[a].key + "=" + p.values[a];
  std::cerr << "sweep: point " << done << "/" << total << " (" << values << "): " << p.tuned_step_us / 1000
            << " ms tuned, " << p.default_step_us / 1000 << " ms at Horovod's defaults" << std::endl;
}

constexpr const char* kSweepFiles[] = {"sweep.csv", "sweep.json", "sweep.html"};

// Either sweep's output files, declared before the sweep runs: --out's three files and --json FILE.
void declare_outputs(const SweepArgs& a, OutputFiles& files) {
  if (!a.out.empty()) files.directory("--out", a.out, {std::begin(kSweepFiles), std::end(kSweepFiles)});
  a.json.declare(files);
}

// Either sweep's outputs: --out's three files and --json, all or none; then the text.
void write_outputs(const SweepArgs& a, OutputFiles& files, const std::string& csv, const std::string& json,
                   const std::string& html, const std::string& text) {
  if (!a.out.empty()) {
    files.stage_in_directory(kSweepFiles[0], csv);
    files.stage_in_directory(kSweepFiles[1], json + "\n");
    files.stage_in_directory(kSweepFiles[2], html);
  }
  a.json.finish(json, files);
  if (a.json.text_wanted()) std::cout << text;
}

// --bytes: busbw against size on every topology of the axes.
void run_size_sweep_command(const SweepArgs& a) {
  if (!a.fixes.empty()) throw Error("--fix: tunes a training step; not with --bytes (a message-size sweep)");
  if (!a.costs.empty()) throw Error("--cost: prices a training step; not with --bytes (a message-size sweep)");
  if (!a.compute.precision.empty() || !a.compute.measured.empty())
    throw Error(std::string(a.compute.precision.empty() ? "--measured-throughput" : "--precision") +
                ": times a training step's compute; not with --bytes (a message-size sweep)");
  if (!a.runtime.empty()) throw Error("--runtime: tunes a training step; not with --bytes (use --algo)");
  tuner::SizeSweepSpec spec;
  spec.topology = a.topology;
  for (const std::string& v : a.vary) spec.axes.push_back(tuner::parse_sweep_axis(v));
  spec.sizes = fp32_sizes(a.bytes, "--bytes");
  if (!a.algo.empty()) spec.algorithm = a.algo;
  if (has_nccl_settings(a.nccl) && spec.algorithm != "nccl")
    throw Error("--nccl-algo/--nccl-proto/--nccl-env: NCCL's settings apply to --algo nccl, not colltune's " +
                spec.algorithm);
  spec.nccl = nccl_settings(a.nccl);
  OutputFiles files;
  declare_outputs(a, files);
  const tuner::SizeSweepResult result = tuner::run_size_sweep(spec);
  write_outputs(a, files, tuner::size_sweep_csv(result), tuner::size_sweep_json(result), tuner::size_sweep_html(result),
                tuner::size_sweep_text(result));
}

// --topology unless an axis gives whole topologies, and not both.
void check_topology(const SweepArgs& a) {
  bool whole = false;
  for (const std::string& v : a.vary) whole = whole || v.rfind("topology=", 0) == 0;
  if (!whole && a.topology.empty()) throw Error("--topology: required (or --vary topology=SPEC,SPEC)");
  if (whole && !a.topology.empty())
    throw Error("--topology " + a.topology + " with --vary topology: give the machines in one place");
}

void run_sweep_command(const SweepArgs& a) {
  check_topology(a);
  if (a.model.empty() == a.bytes.empty())
    throw Error(a.model.empty() ? "give --model (a training step) or --bytes (message sizes)"
                                : "--model and --bytes: give one of them (a training step or message sizes)");
  if (!a.bytes.empty()) return run_size_sweep_command(a);
  if (!a.algo.empty()) throw Error("--algo: with --bytes only (a training step's algorithm is tuned; use --fix)");
  tuner::SweepSpec spec;
  spec.topology = a.topology;
  spec.model = a.model;
  for (const std::string& v : a.vary) spec.axes.push_back(tuner::parse_sweep_axis(v));
  spec.tune.fixes = a.fixes;
  spec.costs = step_costs(a.costs);
  spec.compute = compute_request(a.compute, "h100");  // each point takes its topology's GPU
  spec.runtime = tuner::parse_runtime_spec(a.runtime.empty() ? "horovod" : a.runtime);
  spec.nccl = nccl_settings(a.nccl);
  OutputFiles files;
  declare_outputs(a, files);
  const tuner::SweepResult result =
      tuner::run_sweep(spec, [&spec](std::size_t done, std::size_t total, const tuner::SweepPoint& p) {
        report_progress(spec, done, total, p);
      });
  write_outputs(a, files, tuner::sweep_csv(result), tuner::sweep_json(result), tuner::sweep_html(result),
                tuner::sweep_text(result));
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "Vary one or two things (topology parameters, model, batch) and "
                                              "predict each point at Horovod's defaults and tuned; or, with --bytes, "
                                              "an allreduce's bus bandwidth against size on each topology");
  cmd->add_option("--topology", args->topology,
                  "base preset spec, topology JSON or NCCL XML (required unless --vary topology=SPEC,SPEC)");
  cmd->add_option("--model", args->model, "base model profile or workload file (or --bytes)");
  cmd->add_option("--bytes", args->bytes, "message sizes per rank instead of a model: SIZE or MIN:MAX (x2), e.g. "
                                          "1KiB:1GiB");
  cmd->add_option("--algo", args->algo, "with --bytes: nccl (NCCL's own choice per size; the default) or an allreduce "
                                        "id (ring, dbtree, ...)");
  cmd->add_option("--vary", args->vary, "KEY=V1,V2,...: a topology parameter (nodes, nic_gbit, oversub, gpu, "
                                        "nvls=on,off, sharp=on,off, ...), topology=SPEC,SPEC, model, batch or runtime; "
                                        "once or twice")
      ->required();
  cmd->add_option("--fix", args->fixes, "pin a tuner knob at every point (as tune --fix)");
  add_nccl_setting_options(*cmd, args->nccl);
  add_step_cost_option(*cmd, args->costs);
  add_compute_options(*cmd, args->compute);
  cmd->add_option("--runtime", args->runtime, "horovod (default) | nccl | colltune | ps:servers=S[,colocated][,agg_gbps=X]: what each point is tuned for, as "
                                              "tune --runtime");
  cmd->add_option("--out", args->out, "also write sweep.csv, sweep.json and sweep.html to this directory");
  add_json_option(*cmd, args->json, "The sweep");
  cmd->callback([args] { run_sweep_command(*args); });
}

}  // namespace colltune::cli
