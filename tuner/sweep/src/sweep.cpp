// colltune sweep (sweep.hpp): the points, their specs, and the loop over tune().
#include "colltune/topology/hardware.hpp"
#include "colltune/tuner/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/presets.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::tuner {
namespace {

bool is_model_key(const std::string& key) { return key == "model" || key == "batch"; }
// `--vary runtime=horovod,ps:servers=4`: what each point is tuned for, side by side.
bool is_runtime_key(const std::string& key) { return key == "runtime"; }
// `--vary topology=dgx-a100:nodes=4,dgx-h100:nodes=4`: whole machines, side by side.
bool is_topology_key(const std::string& key) { return key == "topology"; }

// A topology list splits at commas too, but a spec's parameters hold commas
// ("fat-tree:nodes=4,gpu=a100"): an item with '=' before any ':' is a parameter of the spec
// before it; anything else (a preset with or without parameters, a file) starts a spec.
bool starts_a_topology(const std::string& item) {
  const std::size_t eq = item.find('=');
  return eq == std::string::npos || item.find(':') < eq;
}

// The switches a preset turns on and off (nvls, sharp) read on/off as 1/0.
std::string preset_value(const std::string& key, const std::string& value) {
  if (key != "nvls" && key != "sharp") return value;
  return value == "on" ? "1" : value == "off" ? "0" : value;
}

// A runtime list splits at commas, but a ps runtime's options hold commas too
// ("ps:servers=4,colocated"): an item that names no runtime continues the one before.
bool starts_a_runtime(const std::string& item) {
  const std::string head = item.substr(0, item.find(':'));
  return head == "horovod" || head == "nccl" || head == "colltune" || head == "ps";
}

RuntimeSpec runtime_of(const SweepSpec& spec, const std::vector<std::string>& values) {
  for (std::size_t a = 0; a < spec.axes.size(); ++a)
    if (is_runtime_key(spec.axes[a].key)) return parse_runtime_spec(values[a]);
  return spec.runtime;
}

std::string describe_values(const std::vector<SweepAxis>& axes, const std::vector<std::string>& values) {
  std::string out;
  for (std::size_t a = 0; a < axes.size(); ++a) out += (a ? ", " : "") + axes[a].key + "=" + values[a];
  return out;
}

// One note per pair of neighbours along the first axis (points `stride` apart) that `note`
// has something to say about: "a=1 -> a=2: <what note says>".
template <class Note>
std::vector<std::string> neighbour_notes(const SweepResult& r, Note note) {
  std::vector<std::string> notes;
  const std::size_t stride = r.spec.axes.size() > 1 ? r.spec.axes[1].values.size() : 1;
  for (std::size_t i = stride; i < r.points.size(); ++i) {
    const SweepPoint& a = r.points[i - stride];
    const SweepPoint& b = r.points[i];
    const std::string said = note(a, b);
    if (said.empty()) continue;
    notes.push_back(describe_values(r.spec.axes, a.values) + " -> " + describe_values(r.spec.axes, b.values) + ": " +
                    said);
  }
  return notes;
}

// Neighbours whose speedups at the defaults and tuned differ by > 10%.
std::vector<std::string> tuning_changes_the_answer(const SweepResult& r) {
  return neighbour_notes(r, [](const SweepPoint& a, const SweepPoint& b) -> std::string {
    const double at_defaults = b.default_step_us / a.default_step_us;
    const double tuned = b.tuned_step_us / a.tuned_step_us;
    if (std::abs(std::log(at_defaults / tuned)) <= std::log(1.1)) return {};
    char line[128];
    std::snprintf(line, sizeof line, "step time x%.2f at Horovod's defaults, x%.2f tuned", at_defaults, tuned);
    return line;
  });
}

// An axis the base topology cannot vary, said plainly: a DGX preset is its own GPU generation.
void check_axes_apply(const SweepSpec& spec) {
  for (const SweepAxis& axis : spec.axes) {
    if (axis.key != "gpu" || spec.topology.empty() || !topo::is_preset_spec(spec.topology)) continue;
    const std::string preset = spec.topology.substr(0, spec.topology.find(':'));
    for (const topo::PresetInfo& info : topo::preset_catalog()) {
      if (info.name != preset) continue;
      const bool takes_gpu =
          std::any_of(info.params.begin(), info.params.end(), [](const topo::PresetParam& p) { return p.key == "gpu"; });
      if (!takes_gpu)
        throw Error("--vary gpu: " + preset + " is its own GPU generation (it takes no gpu=); vary topology=" + preset +
                    ",... across presets, or start from fat-tree or pcie-box, which take gpu=");
    }
  }
}

// Neighbours whose tuned step moves by less than 1 %: what pinned it.
std::vector<std::string> pinned_points(const SweepResult& r) {
  return neighbour_notes(r, [](const SweepPoint& a, const SweepPoint& b) -> std::string {
    const double moved = b.tuned_step_us / a.tuned_step_us;
    if (std::abs(moved - 1) >= 0.01) return {};
    char head[64];
    std::snprintf(head, sizeof head, "the tuned step does not move (x%.3f)", moved);
    return std::string(head) + ": pinned by " + b.bottleneck.line();
  });
}

}  // namespace

std::vector<std::vector<std::string>> sweep_points(const std::vector<SweepAxis>& axes) {
  std::vector<std::vector<std::string>> out{{}};
  for (const SweepAxis& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& prefix : out)
      for (const std::string& v : axis.values) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  return out;
}

SweepAxis parse_sweep_axis(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--vary " + text + ": expected KEY=V1,V2,... (e.g. nodes=1,2,4 or nic_gbit=100,400)");
  SweepAxis axis{text.substr(0, eq), {}};
  std::string_view rest = std::string_view(text).substr(eq + 1);
  if (rest.empty()) throw Error("--vary " + axis.key + ": the list of values is empty");
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string value(rest.substr(0, comma));
    if (value.empty()) throw Error("--vary " + text + ": an empty value in the list");
    if ((is_runtime_key(axis.key) && !axis.values.empty() && !starts_a_runtime(value)) ||
        (is_topology_key(axis.key) && !axis.values.empty() && !starts_a_topology(value)))
      axis.values.back() += "," + value;
    else
      axis.values.push_back(value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return axis;
}

std::string sweep_topology_spec(const std::string& base, const std::vector<SweepAxis>& axes,
                                const std::vector<std::string>& values) {
  std::string machine = base;
  for (std::size_t a = 0; a < axes.size(); ++a)
    if (is_topology_key(axes[a].key)) machine = values[a];
  // A file path may hold ':' itself ("/data/a:b/server.json:nodes=4").
  parse::Spec s = parse::split_file_spec(machine, "--topology");
  for (std::size_t a = 0; a < axes.size(); ++a)
    if (!is_model_key(axes[a].key) && !is_runtime_key(axes[a].key) && !is_topology_key(axes[a].key))
      s.set(axes[a].key, preset_value(axes[a].key, values[a]));
  return s.text();
}

std::string sweep_model_spec(const std::string& base, const std::vector<SweepAxis>& axes,
                             const std::vector<std::string>& values) {
  std::string model = base;
  for (std::size_t a = 0; a < axes.size(); ++a)
    if (axes[a].key == "model") model = values[a];
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].key != "batch") continue;
    parse::Spec s = parse::split_file_spec(model, "--model");
    s.set("batch", values[a]);
    model = s.text();
  }
  return model;
}

SweepResult run_sweep(const SweepSpec& spec,
                      const std::function<void(std::size_t, std::size_t, const SweepPoint&)>& progress) {
  if (spec.axes.empty() || spec.axes.size() > 2) throw Error("--vary: give one or two (got " +
                                                             std::to_string(spec.axes.size()) + ")");
  if (spec.axes.size() == 2 && spec.axes[0].key == spec.axes[1].key)
    throw Error("--vary " + spec.axes[0].key + " given twice");
  const auto combos = sweep_points(spec.axes);
  if (combos.size() > limits::kMaxSweepPoints)
    limits::exceeded("--vary: " + std::to_string(combos.size()) + " points",
                     std::to_string(limits::kMaxSweepPoints) + " points", limits::kMaxSweepPointsReason);
  check_axes_apply(spec);
  // Every point's inputs first: a bad value fails in a second, not after hours of tuning.
  std::vector<topo::Topology> topologies;
  std::vector<sim::LoadedWorkload> workloads;
  std::vector<RuntimeSpec> runtimes;
  for (const auto& values : combos) {
    const std::string where = "--vary " + describe_values(spec.axes, values) + ": ";
    try {
      runtimes.push_back(runtime_of(spec, values));
      topologies.push_back(topo::load_topology(sweep_topology_spec(spec.topology, spec.axes, values)));
      // Servers that do not fit the point's machine fail here, not after the other points.
      if (runtimes.back().runtime == coll::Runtime::ps) sim::PsExchange(topologies.back(), runtimes.back().ps);
      // A profile's layers are timed on the point's GPU, as `colltune step` times them.
      sim::ComputeRequest request = spec.compute;
      request.gpu = topo::gpu_of(topologies.back()).name;
      workloads.push_back(sim::load_workload(sweep_model_spec(spec.model, spec.axes, values), request));
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
  }
  if (spec.compute.measured_samples_per_s != 0)
    for (const SweepAxis& axis : spec.axes)
      if (axis.key == "gpu" || axis.key == "model" || axis.key == "topology")
        throw Error("--measured-throughput with --vary " + axis.key + ": a measured throughput is one GPU's on one "
                    "model; vary something else, or drop it to compare with the fitted table");
  // A --fix the runtime cannot express fails here too, before any tuning.
  make_space(RuntimeModel(topologies.front(), runtimes.front()), spec.tune.fixes);
  // The points are independent tuning runs: one worker per core, results in point order.
  TuneOptions options = spec.tune;
  options.progress = nullptr;
  const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, combos.size());
  options.threads = std::max<std::size_t>(1, std::thread::hardware_concurrency() / workers);  // the rest per grid
  const auto tune_point = [&](std::size_t i) {
    const sim::Workload& workload = workloads[i].workload;
    SimulatedObjective objective(topologies[i], workload, sim::Engine::analytic, runtimes[i], spec.costs,
                                 kDefaultNcclMargin, spec.nccl);
    const TuneResult t = tune(topologies[i], workload, objective, options);
    const auto price = [&](const topo::Topology& m, const sim::Workload& w, const sim::StepCosts& c, double cycle) {
      Candidate candidate = t.best.candidate;
      candidate.cycle_time_us *= cycle;
      return SimulatedObjective(m, w, sim::Engine::analytic, runtimes[i], c, kDefaultNcclMargin, spec.nccl)
          .evaluate(candidate);
    };
    return SweepPoint{combos[i],
                      sweep_topology_spec(spec.topology, spec.axes, combos[i]),
                      sweep_model_spec(spec.model, spec.axes, combos[i]),
                      t.ranks,
                      workloads[i].compute,
                      t.best_step.compute_us,
                      t.baseline.step_time_us,
                      t.best.step_time_us,
                      t.best.candidate,
                      sim::step_bottleneck(topologies[i], workload, spec.costs, objective.costs(), price,
                                           objective.runtime_model()->nccl_priced())};
  };
  std::vector<std::optional<SweepPoint>> done(combos.size());
  std::atomic<std::size_t> next{0};
  std::mutex m;
  std::size_t finished = 0;
  std::exception_ptr error;
  const auto work = [&] {
    for (std::size_t i = next++; i < combos.size(); i = next++) {
      try {
        SweepPoint p = tune_point(i);
        const std::lock_guard<std::mutex> lock(m);
        done[i] = std::move(p);
        if (progress && !error) progress(++finished, combos.size(), *done[i]);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(m);
        if (!error) error = std::current_exception();
        next = combos.size();
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
  }  // joined
  if (error) std::rethrow_exception(error);
  SweepResult r;
  r.spec = spec;
  for (auto& p : done) r.points.push_back(std::move(*p));
  r.notes = tuning_changes_the_answer(r);
  r.pinned = pinned_points(r);
  return r;
}

}  // namespace colltune::tuner
