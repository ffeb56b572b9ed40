// colltune sweep (sweep.hpp): the points, their specs, and the loop over tune().
#include "colltune/topology/gpus.hpp"
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
#include "colltune/topology/topology.hpp"

namespace colltune::tuner {
namespace {

bool is_model_key(const std::string& key) { return key == "model" || key == "batch"; }
// `--vary runtime=horovod,ps:servers=4`: what each point is tuned for, side by side.
bool is_runtime_key(const std::string& key) { return key == "runtime"; }

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

// Neighbours along the first axis whose speedups at the defaults and tuned differ by > 10%.
std::vector<std::string> tuning_changes_the_answer(const SweepResult& r) {
  std::vector<std::string> notes;
  const std::size_t stride = r.spec.axes.size() > 1 ? r.spec.axes[1].values.size() : 1;
  for (std::size_t i = stride; i < r.points.size(); ++i) {
    const SweepPoint& a = r.points[i - stride];
    const SweepPoint& b = r.points[i];
    const double at_defaults = b.default_step_us / a.default_step_us;
    const double tuned = b.tuned_step_us / a.tuned_step_us;
    if (std::abs(std::log(at_defaults / tuned)) <= std::log(1.1)) continue;
    char line[256];
    std::snprintf(line, sizeof line, "%s -> %s: step time x%.2f at Horovod's defaults, x%.2f tuned",
                  describe_values(r.spec.axes, a.values).c_str(), describe_values(r.spec.axes, b.values).c_str(),
                  at_defaults, tuned);
    notes.emplace_back(line);
  }
  return notes;
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
    if (is_runtime_key(axis.key) && !axis.values.empty() && !starts_a_runtime(value))
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
  // A file path may hold ':' itself ("/data/a:b/server.json:nodes=4").
  parse::Spec s = parse::split_file_spec(base, "--topology");
  for (std::size_t a = 0; a < axes.size(); ++a)
    if (!is_model_key(axes[a].key) && !is_runtime_key(axes[a].key)) s.set(axes[a].key, values[a]);
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
  // Every point's inputs first: a bad value fails in a second, not after hours of tuning.
  std::vector<topo::Topology> topologies;
  std::vector<sim::Workload> workloads;
  std::vector<RuntimeSpec> runtimes;
  for (const auto& values : combos) {
    const std::string where = "--vary " + describe_values(spec.axes, values) + ": ";
    try {
      runtimes.push_back(runtime_of(spec, values));
      topologies.push_back(topo::load_topology(sweep_topology_spec(spec.topology, spec.axes, values)));
      // Servers that do not fit the point's machine fail here, not after the other points.
      if (runtimes.back().runtime == coll::Runtime::ps) sim::PsExchange(topologies.back(), runtimes.back().ps);
      // A profile's layers are timed on the point's GPU, as `colltune step` times them.
      workloads.push_back(sim::load_workload(sweep_model_spec(spec.model, spec.axes, values), nullptr,
                                             topo::gpu_of(topologies.back()).name));
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
  }
  // A --fix the runtime cannot express fails here too, before any tuning.
  make_space(RuntimeModel(topologies.front(), runtimes.front()), spec.tune.fixes);
  // The points are independent tuning runs: one worker per core, results in point order.
  TuneOptions options = spec.tune;
  options.progress = nullptr;
  const auto tune_point = [&](std::size_t i) {
    SimulatedObjective objective(topologies[i], workloads[i], sim::Engine::analytic, runtimes[i], spec.costs);
    const TuneResult t = tune(topologies[i], workloads[i], objective, options);
    return SweepPoint{combos[i],        sweep_topology_spec(spec.topology, spec.axes, combos[i]),
                      sweep_model_spec(spec.model, spec.axes, combos[i]), t.ranks, t.best_step.compute_us,
                      t.baseline.step_time_us, t.best.step_time_us, t.best.candidate};
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
    const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, combos.size());
    std::vector<std::jthread> pool;
    for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
  }  // joined
  if (error) std::rethrow_exception(error);
  SweepResult r;
  r.spec = spec;
  for (auto& p : done) r.points.push_back(std::move(*p));
  r.notes = tuning_changes_the_answer(r);
  return r;
}

}  // namespace colltune::tuner
