// The tuning driver: space, fp16 limit, search, baseline, report material.
#include "colltune/tuner/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "colltune/collectives/registry.hpp"
#include "colltune/tuner/objective.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/cost_model.hpp"

namespace colltune::tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::vector<Evaluation> fastest_distinct(const std::vector<Evaluation>& history, std::size_t n) {
  std::vector<Evaluation> sorted;
  for (const auto& e : history)
    if (e.feasible()) sorted.push_back(e);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Evaluation& a, const Evaluation& b) { return a.step_time_us < b.step_time_us; });
  std::vector<Evaluation> out;
  for (const auto& e : sorted) {
    if (out.size() == n) break;
    const bool dup = std::any_of(out.begin(), out.end(), [&](const Evaluation& o) { return o.candidate == e.candidate; });
    if (!dup) out.push_back(e);
  }
  return out;
}

// The answer is the fastest feasible evaluation, with two accuracy-first rules:
//  - near-ties (within kTieTolerance) go to the configuration that changes less: fp16 off
//    before on, hierarchical off before on; NCCL's own choice before a tuner table only on an
//    exact tie (a table overrides NCCL only where the model predicts a gain, which a step
//    dominated by compute may show only in the last digits);
//  - fp16 compression must buy at least kMinFp16Gain over the best fp16-off configuration,
//    else that one is chosen: a sliver of speed is not worth the rounding error.
constexpr double kTieTolerance = 1e-3;
constexpr double kMinFp16Gain = 0.01;

Evaluation choose_best(const std::vector<Evaluation>& history) {
  const Evaluation* best = &best_of(history);
  if (!best->feasible()) return *best;
  const Evaluation* best_off = nullptr;
  for (const auto& e : history)
    if (!e.candidate.fp16 && e.feasible() && (!best_off || e.step_time_us < best_off->step_time_us)) best_off = &e;
  if (best->candidate.fp16 && best_off && best->step_time_us > best_off->step_time_us * (1.0 - kMinFp16Gain))
    best = best_off;
  const double limit = best->step_time_us * (1.0 + kTieTolerance);
  // Simpler first, then faster.
  auto simpler = [](const Evaluation& a, const Evaluation& b) {
    return std::tuple(a.candidate.fp16, a.candidate.hierarchical, a.step_time_us, a.candidate.algorithm != kNcclChoice) <
           std::tuple(b.candidate.fp16, b.candidate.hierarchical, b.step_time_us, b.candidate.algorithm != kNcclChoice);
  };
  for (const auto& e : history)
    if (e.step_time_us <= limit && e.candidate.fp16 == best->candidate.fp16 && simpler(e, *best))
      best = &e;
  return *best;
}

Fp16Estimate fp16_estimate(const RuntimeModel& runtime, const Candidate& c, const RankLayout& layout,
                           double max_allowed) {
  return estimate_fp16_error(summation_depth(runtime.possible_algorithms(c), layout), max_allowed);
}

double best_time_with_fp16(const std::vector<Evaluation>& history, bool fp16) {
  double best = kInf;
  for (const auto& e : history)
    if (e.candidate.fp16 == fp16) best = std::min(best, e.step_time_us);
  return best;
}

// Horovod has one global hierarchical flag: the candidate's knob. Only colltune's executors
// with "auto" switch per buffer; Horovod cannot, so the flag then follows most bytes.
bool hierarchical_flag(const RuntimeModel& runtime, const Candidate& best, const sim::StepResult& step) {
  if (runtime.runtime() != coll::Runtime::colltune || best.algorithm != kAutoAlgorithm) return best.hierarchical;
  std::size_t hier = 0, total = 0;
  for (const auto& b : step.buffers) {
    total += b.bytes;
    if (coll::find_algorithm(b.algorithm).placement == coll::Placement::per_host) hier += b.bytes;
  }
  return total > 0 && 2 * hier > total;
}

Heatmap make_heatmap(SimulatedObjective& analytic, const Candidate& best) {
  Heatmap h;
  const auto defaults = SearchSpace::defaults({});
  h.fusion_thresholds = defaults.fusion_thresholds;
  h.cycle_times_us = defaults.cycle_times_us;
  for (int half = 0; half < 2; ++half) {
    auto& grid = h.step_us[half];
    grid.assign(h.fusion_thresholds.size(), std::vector<double>(h.cycle_times_us.size(), kInf));
    for (std::size_t i = 0; i < h.fusion_thresholds.size(); ++i)
      for (std::size_t j = 0; j < h.cycle_times_us.size(); ++j) {
        Candidate c = best;
        c.fusion_threshold_bytes = h.fusion_thresholds[i];
        c.cycle_time_us = h.cycle_times_us[j];
        c.fp16 = half == 1;
        grid[i][j] = analytic.evaluate(c);
      }
  }
  return h;
}

// colltune's schedules of the runtime's flat algorithms, and hierarchical over each where the
// runtime has a hierarchical allreduce.
std::vector<BusbwCurve> make_busbw_curves(const sim::CostModel& model, const SearchSpace& space,
                                          const std::vector<std::string>& flat) {
  std::vector<AlgoChoice> choices;
  for (const auto& a : flat) choices.push_back(AlgoChoice{a, "", 0});
  if (std::find(space.hierarchical.begin(), space.hierarchical.end(), true) != space.hierarchical.end())
    for (const auto& a : flat)
      if (std::find(space.hierarchical_algorithms.begin(), space.hierarchical_algorithms.end(), a) !=
          space.hierarchical_algorithms.end())
        choices.push_back(AlgoChoice{std::string(kHierarchicalAlgorithm), a, 0});
  std::vector<BusbwCurve> out;
  for (const auto& c : choices) {
    BusbwCurve curve;
    curve.label = describe(c);
    bool any = false;
    for (std::size_t s = 1 * KiB; s <= 1 * GiB; s *= 2) {
      curve.bytes.push_back(s);
      curve.busbw_gbps.push_back(predicted_busbw(model, c, s, false));
      any = any || curve.busbw_gbps.back() > 0;
    }
    if (any) out.push_back(std::move(curve));
  }
  return out;
}

// The step costs `objective` prices with, for the tuner's own objectives beside it (the report's
// heatmap, the parameter-server comparison): the same costs, so every figure agrees.
sim::StepCosts costs_of(const Objective& objective) {
  const auto* simulated = dynamic_cast<const SimulatedObjective*>(&objective);
  return simulated ? simulated->given_costs() : sim::StepCosts{};
}

// Everything the emitters and the report need beyond the search itself.
void add_report_material(const topo::Topology& topology, const sim::Workload& workload, Objective& objective,
                         const RuntimeModel& runtime, TuneResult& r) {
  auto* simulated = dynamic_cast<SimulatedObjective*>(&objective);
  // The analytical objective's simulator already holds this topology's cost model and the
  // prices it computed during the search: reuse it rather than build a second one.
  std::optional<SimulatedObjective> own_analytic;
  SimulatedObjective& analytic = simulated && simulated->engine() == sim::Engine::analytic
                                     ? *simulated
                                     : own_analytic.emplace(topology, workload, sim::Engine::analytic,
                                                            runtime.runtime(), costs_of(objective));
  r.best_step = simulated ? simulated->step(r.best.candidate) : analytic.step(r.best.candidate);
  r.hierarchical_allreduce = hierarchical_flag(runtime, r.best.candidate, r.best_step);
  r.algo_table = runtime.size_table(r.best.candidate);
  r.nccl_table = runtime.nccl_table(r.best.candidate);
  r.no_nccl_rows = runtime.why_no_nccl_rows(r.best.candidate);
  r.measured_min_bytes = runtime.calibration().measured_min_bytes;
  r.measured_max_bytes = runtime.calibration().measured_max_bytes;
  r.busbw = make_busbw_curves(sim::CostModel(topology), runtime.space(), runtime.flat_algorithms());
  r.heatmap = make_heatmap(analytic, r.best.candidate);
}

// Why `infeasible` does not run, where a simulated objective can say it ("": it cannot): the
// error its step raises, e.g. "NCCL cannot run dbtree (Tree) for an allreduce of 1 KiB here"
// under a user's NCCL_ALGO=Ring.
std::string why_not(const Objective& objective, const Evaluation& infeasible) {
  const auto* simulated = dynamic_cast<const SimulatedObjective*>(&objective);
  if (!simulated) return "";
  try {
    simulated->step(infeasible.candidate);
  } catch (const Error& e) {
    return std::string(" (") + e.what() + ")";
  }
  return "";
}

}  // namespace

SearchSpace make_space(const RuntimeModel& runtime, const std::vector<std::string>& fixes) {
  SearchSpace space = runtime.space();
  for (const auto& f : fixes) space.fix(f);
  return space;
}

TuneResult tune(const topo::Topology& topology, const sim::Workload& workload, Objective& objective,
                const TuneOptions& options) {
  if (!(options.max_fp16_error > 0) || !std::isfinite(options.max_fp16_error))
    throw Error("--max-fp16-error " + short_number(options.max_fp16_error) + ": must be a positive number");
  if (workload.tensors.empty()) throw Error("model '" + workload.name + "' has no gradient tensors");
  TuneResult r;
  std::optional<RuntimeModel> own_runtime;
  const RuntimeModel& runtime = objective.runtime_model() ? *objective.runtime_model()
                                                          : own_runtime.emplace(topology, coll::Runtime::colltune, false);
  const SearchSpace space = make_space(runtime, options.fixes);
  const RankLayout layout = topology.rank_layout();
  SearchOptions search_options;
  search_options.budget = options.budget;
  search_options.seed = options.seed;
  search_options.progress = options.progress;
  search_options.threads = options.threads;
  search_options.accept = [&](const Candidate& c) {
    return !c.fp16 || fp16_estimate(runtime, c, layout, options.max_fp16_error).accepted;
  };
  const Candidate baseline = runtime.baseline();
  // The search starts from Horovod's defaults where the space holds them.
  for (Candidate first : {baseline, horovod_baseline()})
    if (search_options.initial.empty() && space.contains(first)) search_options.initial = {first};
  const auto start = std::chrono::steady_clock::now();
  try {
    r.history = search(options.strategy, space, objective, search_options);
  } catch (const Error& e) {
    if (space.is_fixed("fp16") && space.fp16 == std::vector<bool>{true})
      throw Error(std::string(e.what()) + "; fp16=on is pinned but its predicted error exceeds --max-fp16-error " +
                  short_number(options.max_fp16_error));
    throw;
  }
  r.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // The search evaluates the baseline whenever it is in the space (first, for bayes and random):
  // take that evaluation - one run fewer, and a measured objective then compares the best and
  // the baseline from the same samples.
  const auto searched = std::find_if(r.history.begin(), r.history.end(),
                                     [&](const Evaluation& e) { return e.candidate == baseline; });
  r.baseline = searched != r.history.end() ? *searched : Evaluation{baseline, objective.evaluate(baseline)};
  r.best = choose_best(r.history);
  if (!r.best.feasible())
    throw Error("no configuration in the search space can run on this topology" + why_not(objective, r.best));
  r.top = fastest_distinct(r.history, options.top_n);
  r.best_fp16_off_us = best_time_with_fp16(r.history, false);
  r.best_fp16_on_us = best_time_with_fp16(r.history, true);
  r.fp16 = fp16_estimate(runtime, r.best.candidate, layout, options.max_fp16_error);
  r.topology = topology.name;
  r.ranks = topology.num_ranks();
  r.hosts = topology.num_hosts();
  r.model = workload.name;
  r.gradient_bytes = workload.total_bytes();
  r.forward_us = workload.forward_us;
  r.objective = objective.name();
  r.runtime = runtime.runtime();
  r.baseline_description = runtime.baseline_description();
  if (runtime.ps()) {
    SimulatedObjective allreduce(topology, workload, sim::Engine::analytic, coll::Runtime::horovod,
                                 costs_of(objective));
    r.allreduce_step_us = allreduce.evaluate(RuntimeModel(topology, coll::Runtime::horovod).baseline());
  }
  r.nccl_priced = runtime.nccl_priced();
  r.nccl = runtime.nccl_options();
  if (const auto* simulated = dynamic_cast<const SimulatedObjective*>(&objective)) r.step_costs = simulated->costs();
  r.strategy = options.strategy;
  r.seed = options.seed;
  r.space_size = space.size();
  r.fixes = options.fixes;
  add_report_material(topology, workload, objective, runtime, r);
  return r;
}

}  // namespace colltune::tuner
