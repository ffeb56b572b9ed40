// `colltune step` what-if options (step_whatif.hpp): uneven data and failures.
#include "commands/step_whatif.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/profiles.hpp"

namespace colltune::cli {
namespace {

double ms(double us) { return us / 1e3; }

std::string fixed(double v, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

std::string seconds(double s) { return format_time_us(s * 1e6); }

// A signed duration: a negative loss (the uneven split is faster, e.g. a slow rank given fewer
// batches) reads "-1.20 s".
std::string signed_seconds(double s) { return (s < 0 ? "-" : "") + seconds(std::abs(s)); }

// Samples per rank per step: --batch-size, else a profile's batch (its spec's batch= or the
// model's default), else 1 (a workload file does not say).
long samples_per_rank(const WhatIfArgs& a, const std::string& spec) {
  if (a.given(a.batch_size_option)) {
    if (a.batch_size < 1) throw Error("--batch-size " + std::to_string(a.batch_size) + ": must be at least 1");
    return a.batch_size;
  }
  if (!sim::is_profile_spec(spec)) return 1;
  const parse::Spec profile = parse::split_spec(spec, "--model");
  if (const parse::SpecItem* batch = profile.find("batch")) return parse::integer<long>(batch->value, "--model batch");
  return sim::model_architecture(profile.name).default_batch;
}

sim::UnevenResult run_uneven(const WhatIfArgs& a, const topo::Topology& topology, const sim::StepSimulator& simulator,
                             const sim::Workload& workload, const sim::StepConfig& config, sim::Engine engine,
                             const std::vector<double>& rank_factor, std::uint64_t seed) {
  if (a.batches < 0) throw Error("--batches " + std::to_string(a.batches) + ": must be a whole number >= 0");
  const long batches = a.batches;
  std::vector<long> counts = a.spread.empty()
                                 ? std::vector<long>(static_cast<std::size_t>(topology.num_ranks()), batches)
                                 : sim::spread_batches(batches, a.spread, topology.num_ranks(), seed);
  for (const std::string& u : a.uneven) sim::apply_uneven(u, topology, counts);
  return sim::simulate_uneven(simulator, workload, config, engine, counts, rank_factor);
}

sim::FailureOptions failure_options(const WhatIfArgs& a, const topo::Topology& topology, long batch) {
  if (!a.given(a.run_steps_option)) throw Error("--fail needs --run-steps N: the steps of the whole run");
  sim::FailureOptions o;
  o.run_steps = a.run_steps;
  if (o.run_steps < 1) throw Error("--run-steps " + std::to_string(a.run_steps) + ": must be at least 1");
  for (const std::string& f : a.fail) o.failures.push_back(sim::parse_failure(f, topology, o.run_steps));
  o.samples_per_rank = batch;
  o.commit_every = a.commit_every;
  o.checkpoint_every = a.checkpoint_every;
  if (!a.state_size.empty())
    o.state_bytes = static_cast<double>(parse_size(a.state_size, "--state-size", BareNumber::refused));
  o.storage_gbps = parse::rate_gbps(a.storage_gbps, "--storage-gbps");
  o.detect_s = parse_time_us(a.detect, "--detect-timeout") / 1e6;
  o.rendezvous_s = parse_time_us(a.rendezvous, "--rendezvous") / 1e6;
  o.relaunch_s = parse_time_us(a.relaunch, "--relaunch") / 1e6;
  return o;
}

nlohmann::ordered_json recovery_json(const sim::Recovery& r) {
  return {{"run_s", r.run_s},
          {"lost_s", r.lost_s},
          {"samples", r.samples},
          {"samples_per_s", r.throughput},
          {"redone_steps", r.redone_steps},
          {"final_ranks", r.final_ranks}};
}

std::string host_list(const std::vector<int>& hosts, const topo::Topology& topology) {
  std::string out;
  for (int h : hosts) out += (out.empty() ? "" : ", ") + topology.host_name(h);
  return out;
}

}  // namespace

void add_whatif_options(CLI::App& step, WhatIfArgs& a) {
  a.batches_option =
      step.add_option("--batches", a.batches, "uneven data: batches per rank per epoch")->capture_default_str();
  step.add_option("--uneven", a.uneven, "uneven data: WHO:N, rank or host WHO gets N batches (repeatable)");
  step.add_option(
      "--uneven-spread", a.spread,
      "uneven data: every rank's batches moved by a uniform draw in +-X (a count, or P%), seeded by --seed");
  step.add_option("--fail", a.fail, "failure: HOST:STEP, host name or index dies as that step starts (repeatable)");
  a.run_steps_option =
      step.add_option("--run-steps", a.run_steps, "failure: steps of the whole run (required with --fail)");
  a.batch_size_option =
      step.add_option("--batch-size", a.batch_size,
                      "samples per rank per step for throughput (default: the profile's batch; 1 for workload files)");
  step.add_option("--commit-every", a.commit_every, "elastic: steps between state.commit() calls")
      ->capture_default_str();
  step.add_option("--checkpoint-every", a.checkpoint_every, "checkpoint: steps between checkpoints")
      ->capture_default_str();
  step.add_option("--state-size", a.state_size,
                  "model + optimizer state with a unit (default 2 x parameters x 4 B: fp32 weights and momentum)");
  step.add_option("--storage-gbps", a.storage_gbps, "checkpoint write and read bandwidth, GB/s (or with a unit: Gb/s, MB/s, TB/s)")->capture_default_str();
  step.add_option("--detect-timeout", a.detect, "failure detection timeout (Horovod's gloo timeout)")
      ->capture_default_str();
  step.add_option("--rendezvous", a.rendezvous, "elastic: time to re-form the job")->capture_default_str();
  step.add_option("--relaunch", a.relaunch, "checkpoint: time to relaunch the job")->capture_default_str();
}

WhatIfResult run_whatif(const WhatIfArgs& a, const std::string& model_spec, const topo::Topology& topology,
                        const sim::StepCosts& costs, const sim::StepSimulator& simulator, const sim::Workload& workload,
                        const sim::StepConfig& config, sim::Engine engine, const std::vector<double>& rank_factor,
                        std::uint64_t seed) {
  WhatIfResult r;
  if (!a.fail_wanted() && a.given(a.run_steps_option)) throw Error("--run-steps applies to --fail: give a failure too");
  if (a.uneven_wanted()) r.uneven = run_uneven(a, topology, simulator, workload, config, engine, rank_factor, seed);
  if (!a.fail_wanted()) return r;
  r.batch_size = samples_per_rank(a, model_spec);
  r.failure_options = failure_options(a, topology, r.batch_size);
  r.failure_options.rank_factor = rank_factor;
  r.failures = sim::simulate_failures(topology, costs, workload, config, engine, r.failure_options);
  return r;
}

void add_whatif_json(nlohmann::ordered_json& json, const WhatIfResult& result, const topo::Topology& topology) {
  if (const auto& u = result.uneven) {
    json["uneven"] = {{"total_batches", u->total_batches},
                      {"steps", u->steps},
                      {"even_steps", u->even_steps},
                      {"epoch_s", u->epoch_us / 1e6},
                      {"even_epoch_s", u->even_epoch_us / 1e6},
                      {"loss_s", u->loss_us / 1e6},
                      {"loss_fraction", u->even_epoch_us > 0 ? u->loss_us / u->even_epoch_us : 0.0},
                      {"idle_rank_steps", u->idle_rank_steps},
                      {"idle_fraction", u->idle_fraction},
                      {"batches", u->batches}};
  }
  if (const auto& f = result.failures) {
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const sim::ElasticStage& s : f->stages) {
      nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
      for (int h : s.hosts) hosts.push_back(topology.host_name(h));
      stages.push_back({{"step", s.step},
                        {"hosts", hosts},
                        {"resumed_from", s.resumed_from},
                        {"ranks", s.ranks},
                        {"step_time_ms", ms(s.step_us)},
                        {"broadcast_ms", ms(s.broadcast_us)}});
    }
    const sim::FailureOptions& o = result.failure_options;
    const nlohmann::ordered_json inputs = {
        {"run_steps", o.run_steps},       {"detect_timeout_s", o.detect_s},         {"rendezvous_s", o.rendezvous_s},
        {"commit_every", o.commit_every}, {"checkpoint_every", o.checkpoint_every}, {"storage_gbps", o.storage_gbps},
        {"relaunch_s", o.relaunch_s}};
    json["failures"] = {{"inputs", inputs},
                        {"batch_size", result.batch_size},
                        {"step_time_ms", ms(f->step_us)},
                        {"state_bytes", f->state_bytes},
                        {"checkpoint_write_s", f->checkpoint_write_s},
                        {"checkpoint_read_s", f->checkpoint_read_s},
                        {"restart_broadcast_ms", ms(f->restart_broadcast_us)},
                        {"baseline_s", f->baseline_s},
                        {"baseline_samples_per_s", f->baseline_throughput},
                        {"elastic_stages", stages},
                        {"elastic", recovery_json(f->elastic)},
                        {"checkpoint", recovery_json(f->checkpoint)},
                        {"nothing", recovery_json(f->nothing)}};
  }
}

void print_whatif(std::ostream& out, const WhatIfResult& result, const topo::Topology& topology) {
  if (const auto& u = result.uneven) {
    const double loss = u->even_epoch_us > 0 ? u->loss_us / u->even_epoch_us : 0.0;
    out << "\nuneven data         " << u->total_batches << " batches, " << u->steps << " steps (even split "
        << u->even_steps << "); joined ranks allreduce zeros (hvd.join)\n"
        << "epoch time          " << seconds(u->epoch_us / 1e6) << " (even split " << seconds(u->even_epoch_us / 1e6)
        << ", loss " << signed_seconds(u->loss_us / 1e6) << " = " << fixed(100 * loss, 1) << " %)\n"
        << "idle                " << u->idle_rank_steps << " rank-steps joined (" << fixed(100 * u->idle_fraction, 1)
        << " % of the ranks' steps)\n";
  }
  if (const auto& f = result.failures) {
    out << "\nfailures            ";
    for (std::size_t i = 0; i < f->stages.size(); ++i)
      out << (i ? "; " : "") << host_list(f->stages[i].hosts, topology) << " at step " << f->stages[i].step << " -> "
          << f->stages[i].ranks << " ranks, step " << format_time_us(f->stages[i].step_us);
    const sim::FailureOptions& o = result.failure_options;
    out << "\ninputs              detection " << seconds(o.detect_s) << ", rendezvous " << seconds(o.rendezvous_s)
        << ", relaunch " << seconds(o.relaunch_s) << ", state "
        << format_bytes(static_cast<std::size_t>(f->state_bytes)) << "\n                    commit every "
        << o.commit_every << " steps, checkpoint every " << o.checkpoint_every << " steps (write "
        << seconds(f->checkpoint_write_s) << " at " << o.storage_gbps << " GB/s)\n";
    out << "no failure          " << seconds(f->baseline_s) << ", " << fixed(f->baseline_throughput, 1)
        << " samples/s (" << f->ranks << " ranks x " << result.batch_size << " per step)\n"
        << std::left << std::setw(20) << "recovery" << std::right << std::setw(14) << "run" << std::setw(14) << "lost"
        << std::setw(16) << "samples/s" << std::setw(8) << "redone"
        << "\n";
    const auto row = [&](const char* name, const sim::Recovery& r) {
      out << std::left << std::setw(20) << name << std::right << std::setw(14) << seconds(r.run_s) << std::setw(14)
          << seconds(r.lost_s) << std::setw(16) << fixed(r.throughput, 1) << std::setw(8) << r.redone_steps << "\n";
    };
    row("elastic", f->elastic);
    row("checkpoint", f->checkpoint);
    row("nothing", f->nothing);
  }
}

}  // namespace colltune::cli
