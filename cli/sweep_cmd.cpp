// colltune sweep --topology SPEC --model M --vary KEY=V1,V2,... [--vary ...] [--out DIR]: one or
// two things varied, each point at Horovod's defaults and tuned (tuner/sweep.hpp).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/tuner/sweep.hpp"
#include "commands.hpp"
#include "options.hpp"

namespace colltune::cli {
namespace {

struct SweepArgs {
  std::string topology;
  std::string model;
  std::vector<std::string> vary;
  std::vector<std::string> fixes;
  std::string runtime = "horovod";
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

void run_sweep_command(const SweepArgs& a) {
  tuner::SweepSpec spec;
  spec.topology = a.topology;
  spec.model = a.model;
  for (const std::string& v : a.vary) spec.axes.push_back(tuner::parse_sweep_axis(v));
  spec.tune.fixes = a.fixes;
  spec.runtime = tuner::parse_runtime_spec(a.runtime);
  const tuner::SweepResult result =
      tuner::run_sweep(spec, [&spec](std::size_t done, std::size_t total, const tuner::SweepPoint& p) {
        report_progress(spec, done, total, p);
      });
  if (!a.out.empty()) {
    FileSetWriter writer(a.out);
    writer.stage("sweep.csv", tuner::sweep_csv(result));
    writer.stage("sweep.json", tuner::sweep_json(result) + "\n");
    writer.stage("sweep.html", tuner::sweep_html(result));
    writer.commit();
  }
  a.json.write(tuner::sweep_json(result));
  if (a.json.text_wanted()) std::cout << tuner::sweep_text(result);
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "Vary one or two things (topology parameters, model, batch) and "
                                              "predict each point at Horovod's defaults and tuned");
  cmd->add_option("--topology", args->topology, "base preset spec, topology JSON or NCCL XML")->required();
  cmd->add_option("--model", args->model, "base model profile or workload file")->required();
  cmd->add_option("--vary", args->vary, "KEY=V1,V2,...: a topology parameter (nodes, nic_gbit, oversub, ...), "
                                        "model or batch; once or twice")
      ->required();
  cmd->add_option("--fix", args->fixes, "pin a tuner knob at every point (as tune --fix)");
  cmd->add_option("--runtime", args->runtime, "horovod (default) | nccl | colltune | ps:servers=S[,colocated][,agg_gbps=X]: what each point is tuned for, as "
                                              "tune --runtime");
  cmd->add_option("--out", args->out, "also write sweep.csv, sweep.json and sweep.html to this directory");
  add_json_option(*cmd, args->json, "The sweep");
  cmd->callback([args] { run_sweep_command(*args); });
}

}  // namespace colltune::cli
