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
//    before on, hierarchical off before on;
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
    return std::tuple(a.candidate.fp16, a.candidate.hierarchical, a.step_time_us) <
           std::tuple(b.candidate.fp16, b.candidate.hierarchical, b.step_time_us);
  };
  for (const auto& e : history)
    if (e.step_time_us <= limit && e.candidate.fp16 == best->candidate.fp16 && simpler(e, *best))
      best = &e;
  return *best;
}

double best_time_with_fp16(const std::vector<Evaluation>& history, bool fp16) {
  double best = kInf;
  for (const auto& e : history)
    if (e.candidate.fp16 == fp16) best = std::min(best, e.step_time_us);
  return best;
}

// Horovod has one global hierarchical flag. For a fixed algorithm it is the knob; for "auto"
// it is on when most of the step's bytes went through a hierarchical algorithm.
bool hierarchical_flag(const Candidate& best, const sim::StepResult& step) {
  if (best.algorithm != kAutoAlgorithm) return best.hierarchical;
  std::size_t hier = 0, total = 0;
  for (const auto& b : step.buffers) {
    total += b.bytes;
    if (b.algorithm.rfind("hierarchical", 0) == 0) hier += b.bytes;
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

std::vector<BusbwCurve> make_busbw_curves(const sim::CostModel& model, const std::vector<std::string>& flat) {
  std::vector<AlgoChoice> choices;
  for (const auto& a : flat) choices.push_back(AlgoChoice{a, "", 0});
  for (const auto& a : flat) choices.push_back(AlgoChoice{"hierarchical", a, 0});
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

// Everything the emitters and the report need beyond the search itself.
void add_report_material(const topo::Topology& topology, const sim::Workload& workload, Objective& objective,
                         TuneResult& r) {
  auto* simulated = dynamic_cast<SimulatedObjective*>(&objective);
  // The analytical objective's simulator already holds this topology's cost model and the
  // prices it computed during the search: reuse it rather than build a second one.
  std::optional<SimulatedObjective> own_analytic;
  SimulatedObjective& analytic = simulated && simulated->engine() == sim::Engine::analytic
                                     ? *simulated
                                     : own_analytic.emplace(topology, workload, sim::Engine::analytic);
  r.best_step = simulated ? simulated->step(r.best.candidate) : analytic.step(r.best.candidate);
  r.hierarchical_allreduce = hierarchical_flag(r.best.candidate, r.best_step);
  const sim::CostModel model(topology);
  const auto flat = flat_allreduce_algorithms();
  AlgoTableOptions table;
  table.algorithms = flat;
  table.chunks = {0, 1 * MiB};
  table.fp16 = r.best.candidate.fp16;
  r.algo_table = build_algo_table(model, table);
  table.algorithms.clear();
  for (const auto& a : flat)
    if (nccl_algorithm(a)) table.algorithms.push_back(a);
  table.hierarchical = false;
  table.chunks = {0};
  if (!table.algorithms.empty()) r.nccl_table = build_algo_table(model, table);
  r.busbw = make_busbw_curves(model, flat);
  r.heatmap = make_heatmap(analytic, r.best.candidate);
}

}  // namespace

std::vector<std::string> flat_allreduce_algorithms() {
  std::vector<std::string> out;
  for (const auto& a : coll::algorithms())
    if (a.collective == coll::Collective::allreduce && a.id.rfind("hierarchical", 0) != 0) out.push_back(a.id);
  return out;
}

SearchSpace make_space(const std::vector<std::string>& fixes) {
  SearchSpace space = SearchSpace::defaults(flat_allreduce_algorithms());
  for (const auto& f : fixes) space.fix(f);
  return space;
}

TuneResult tune(const topo::Topology& topology, const sim::Workload& workload, Objective& objective,
                const TuneOptions& options) {
  if (!(options.max_fp16_error > 0) || !std::isfinite(options.max_fp16_error))
    throw Error("--max-fp16-error " + short_number(options.max_fp16_error) + ": must be a positive number");
  if (workload.tensors.empty()) throw Error("model '" + workload.name + "' has no gradient tensors");
  TuneResult r;
  const SearchSpace space = make_space(options.fixes);
  const RankLayout layout = topology.rank_layout();
  SearchOptions search_options;
  search_options.budget = options.budget;
  search_options.seed = options.seed;
  search_options.progress = options.progress;
  search_options.accept = [&](const Candidate& c) {
    return !c.fp16 || estimate_fp16_error(c.algorithm, c.hierarchical, layout, options.max_fp16_error).accepted;
  };
  const Candidate baseline = horovod_baseline();
  search_options.initial = {baseline};
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
  if (!r.best.feasible()) throw Error("no configuration in the search space can run on this topology");
  r.top = fastest_distinct(r.history, options.top_n);
  r.best_fp16_off_us = best_time_with_fp16(r.history, false);
  r.best_fp16_on_us = best_time_with_fp16(r.history, true);
  r.fp16 = estimate_fp16_error(r.best.candidate.algorithm, r.best.candidate.hierarchical, layout,
                               options.max_fp16_error);
  r.topology = topology.name;
  r.ranks = topology.num_ranks();
  r.hosts = topology.num_hosts();
  r.model = workload.name;
  r.gradient_bytes = workload.total_bytes();
  r.forward_us = workload.forward_us;
  r.objective = objective.name();
  r.strategy = options.strategy;
  r.seed = options.seed;
  r.space_size = space.size();
  r.fixes = options.fixes;
  add_report_material(topology, workload, objective, r);
  return r;
}

}  // namespace colltune::tuner
