// Failures (failures.hpp): elastic recovery, restart from a checkpoint, or nothing.
#include "colltune/sim/failures.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/uneven.hpp"
#include "colltune/topology/subset.hpp"

namespace colltune::sim {
namespace {

constexpr double kUsPerS = 1e6;

// The failures grouped by step, in step order (hosts dying at one step are one event).
std::map<long, std::vector<int>> events_of(const FailureOptions& o, const topo::Topology& topology) {
  std::map<long, std::vector<int>> events;
  std::map<int, long> failed_at;
  for (const Failure& f : o.failures) {
    if (f.step < 1 || f.step > o.run_steps)
      throw Error("--fail: step " + std::to_string(f.step) + " is not in 1.." + std::to_string(o.run_steps));
    if (f.host < 0 || f.host >= topology.num_hosts())
      throw Error("--fail: host " + std::to_string(f.host) + " is not in 0.." +
                  std::to_string(topology.num_hosts() - 1));
    if (const auto it = failed_at.find(f.host); it != failed_at.end())
      throw Error("--fail: host " + topology.host_name(f.host) + " fails twice (steps " + std::to_string(it->second) +
                  " and " + std::to_string(f.step) + ")");
    failed_at[f.host] = f.step;
    events[f.step].push_back(f.host);
  }
  if (events.empty()) throw Error("--fail: no failure given");
  if (static_cast<int>(failed_at.size()) == topology.num_hosts())
    throw Error("--fail: every host of the topology fails, nothing is left to continue on");
  return events;
}

void check_options(const FailureOptions& o) {
  if (o.run_steps < 1) throw Error("--run-steps " + std::to_string(o.run_steps) + ": must be at least 1");
  if (o.samples_per_rank < 1)
    throw Error("--batch-size " + std::to_string(o.samples_per_rank) + ": must be at least 1");
  if (o.commit_every < 1) throw Error("--commit-every " + std::to_string(o.commit_every) + ": must be at least 1");
  if (o.checkpoint_every < 1)
    throw Error("--checkpoint-every " + std::to_string(o.checkpoint_every) + ": must be at least 1");
  const auto non_negative = [](double v, const char* name) {
    if (!(v >= 0) || !std::isfinite(v)) throw Error(std::string(name) + ": must be a finite number >= 0");
  };
  non_negative(o.detect_s, "--detect-timeout");
  non_negative(o.rendezvous_s, "--rendezvous");
  non_negative(o.relaunch_s, "--relaunch");
  non_negative(o.state_bytes, "--state-size");
  if (!(o.storage_gbps > 0) || !std::isfinite(o.storage_gbps)) throw Error("--storage-gbps: must be a positive number");
}

// Checkpoints written while the run goes from `done` completed steps to `to` (one after every
// K-th step).
long writes_between(long done, long to, long every) { return to / every - done / every; }

// The step on `machine`, whose ranks are the ranks of `whole` not on a `dead` host, at the
// slowest of those ranks' --slow factors.
double step_us(const topo::Topology& whole, const std::vector<int>& dead, const topo::Topology& machine,
               const StepCosts& costs, const Workload& workload, const StepConfig& config, Engine engine,
               const std::vector<double>& factor) {
  double slowest = factor.empty() ? 1.0 : 0.0;
  for (int r = 0; r < whole.num_ranks() && !factor.empty(); ++r)
    if (std::find(dead.begin(), dead.end(), whole.host_of_rank(r)) == dead.end())
      slowest = std::max(slowest, factor[static_cast<std::size_t>(r)]);
  return StepSimulator(machine, costs).run(with_compute_scaled(workload, slowest), config, engine).step_time_us;
}

Recovery finish(Recovery r) {
  r.throughput = r.run_s > 0 ? r.samples / r.run_s : 0;
  return r;
}

}  // namespace

Failure parse_failure(const std::string& text, const topo::Topology& topology, long run_steps) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw Error("--fail " + text + ": expected HOST:STEP, HOST a host name or index (e.g. node1:5000)");
  const std::string who = text.substr(0, colon), step = text.substr(colon + 1);
  Failure f;
  f.host = topo::find_host(topology, who);
  if (f.host < 0) throw Error("--fail " + text + ": the topology has no host '" + who + "'");
  const std::optional<long> n = parse::try_integer<long>(step);
  if (!n || step[0] == '-') throw Error("--fail " + text + ": the step must be a whole number in 1.." + std::to_string(run_steps));
  f.step = *n;
  if (f.step > run_steps)
    throw Error("--fail " + text + ": step " + step + " is after the last step of the run (--run-steps " +
                std::to_string(run_steps) + ")");
  if (f.step < 1) throw Error("--fail " + text + ": steps count from 1");
  return f;
}

double default_state_bytes(const Workload& workload) {
  return 2.0 * static_cast<double>(workload.total_params()) * 4.0;
}

double state_broadcast_us(const topo::Topology& topology, double bytes) {
  const int p = topology.num_ranks();
  if (p < 2 || bytes <= 0) return 0;
  // Whole fp32 elements, at least one per rank (the allgather's blocks).
  const auto elems = std::max(static_cast<std::size_t>(std::ceil(bytes / 4.0)), static_cast<std::size_t>(p));
  CollectiveRequest request;
  request.algorithm = "allgather_ring";
  request.bytes = elems * 4;
  request.elem_size = 4;
  return CostModel(topology).time_us(request) * static_cast<double>(p) / static_cast<double>(p - 1);
}

FailureResult simulate_failures(const topo::Topology& topology, const StepCosts& costs, const Workload& workload,
                                const StepConfig& config, Engine engine, const FailureOptions& o) {
  check_options(o);
  const std::map<long, std::vector<int>> events = events_of(o, topology);
  const double n = static_cast<double>(o.run_steps);
  const double batch = static_cast<double>(o.samples_per_rank);
  FailureResult out;
  out.ranks = topology.num_ranks();
  if (!o.rank_factor.empty() && o.rank_factor.size() != static_cast<std::size_t>(topology.num_ranks()))
    throw Error("failures: " + std::to_string(o.rank_factor.size()) + " rank factors for " +
                std::to_string(topology.num_ranks()) + " ranks");
  out.step_us = step_us(topology, {}, topology, costs, workload, config, engine, o.rank_factor);
  out.state_bytes = o.state_bytes > 0 ? o.state_bytes : default_state_bytes(workload);
  out.checkpoint_write_s = out.state_bytes / (o.storage_gbps * 1e9);
  out.checkpoint_read_s = out.checkpoint_write_s;
  out.restart_broadcast_us = state_broadcast_us(topology, out.state_bytes);
  const double t_full = out.step_us / kUsPerS;
  out.baseline_s = n * t_full;
  out.baseline_throughput = batch * out.ranks / t_full;

  // Elastic: run to the failure, roll back to the last commit (or the last resync), recover,
  // and go on with fewer ranks at their step.
  {
    Recovery r;
    long done = 0, resynced = 0;
    double t = t_full;
    int ranks = out.ranks;
    std::vector<int> dead;
    for (const auto& [step, hosts] : events) {
      r.run_s += static_cast<double>(step - 1 - done) * t;
      r.samples += static_cast<double>(step - 1 - done) * batch * ranks;
      done = step - 1;
      const long kept = std::max(resynced, done / o.commit_every * o.commit_every);
      const long redo = done - kept;
      r.samples -= static_cast<double>(redo) * batch * ranks;
      r.redone_steps += redo;
      dead.insert(dead.end(), hosts.begin(), hosts.end());
      const topo::Topology left = topo::without_hosts(topology, dead);
      ElasticStage stage{step, hosts, kept, left.num_ranks(), 0, state_broadcast_us(left, out.state_bytes)};
      stage.step_us = step_us(topology, dead, left, costs, workload, config, engine, o.rank_factor);
      const double recover = o.detect_s + o.rendezvous_s + stage.broadcast_us / kUsPerS;
      r.run_s += recover;
      r.lost_s += recover + static_cast<double>(redo) * t;
      out.stages.push_back(stage);
      done = resynced = kept;
      t = stage.step_us / kUsPerS;
      ranks = stage.ranks;
    }
    r.run_s += static_cast<double>(o.run_steps - done) * t;
    r.samples += static_cast<double>(o.run_steps - done) * batch * ranks;
    r.final_ranks = ranks;
    out.elastic = finish(r);
  }

  // Checkpoint: every K steps a write stalls the run; at a failure the job is relaunched on a
  // whole machine, reads the last checkpoint, broadcasts it, and redoes the steps since.
  {
    Recovery r;
    long done = 0;
    const double restart = o.relaunch_s + out.checkpoint_read_s + out.restart_broadcast_us / kUsPerS;
    for (const auto& [step, hosts] : events) {
      const long writes = writes_between(done, step - 1, o.checkpoint_every);
      r.run_s += static_cast<double>(step - 1 - done) * t_full + static_cast<double>(writes) * out.checkpoint_write_s;
      r.lost_s += static_cast<double>(writes) * out.checkpoint_write_s;
      const long kept = std::max(done, (step - 1) / o.checkpoint_every * o.checkpoint_every);
      const long redo = step - 1 - kept;
      r.redone_steps += redo;
      r.run_s += o.detect_s + restart;
      r.lost_s += o.detect_s + restart + static_cast<double>(redo) * t_full;
      done = kept;
    }
    const long writes = writes_between(done, o.run_steps, o.checkpoint_every);
    r.run_s += static_cast<double>(o.run_steps - done) * t_full + static_cast<double>(writes) * out.checkpoint_write_s;
    r.lost_s += static_cast<double>(writes) * out.checkpoint_write_s;
    r.samples = n * batch * out.ranks;
    r.final_ranks = out.ranks;
    out.checkpoint = finish(r);
  }

  // Nothing: the steps before the first failure, over the planned run's time.
  {
    Recovery r;
    const long before = events.begin()->first - 1;
    r.run_s = out.baseline_s;
    r.samples = static_cast<double>(before) * batch * out.ranks;
    r.lost_s = static_cast<double>(o.run_steps - before) * t_full;
    r.final_ranks = out.ranks;
    out.nothing = finish(r);
  }
  return out;
}

}  // namespace colltune::sim
