// Grid, random and Bayesian-optimisation search.
#include "colltune/tuner/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "colltune/common/error.hpp"
#include "colltune/common/parallel.hpp"
#include "colltune/tuner/knobs.hpp"
#include "colltune/tuner/gp.hpp"

namespace colltune::tuner {
namespace {

// Maps value into [0,1] on a log scale over [lo, hi]; values at or below lo (including 0) map to 0.
double log_unit(double value, double lo, double hi) {
  if (hi <= lo) return 0.0;
  const double v = std::clamp(value, lo, hi);
  return (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
}

template <typename T>
std::pair<double, double> positive_range(const std::vector<T>& values, double floor_value) {
  double lo = floor_value, hi = floor_value;
  bool any = false;
  for (T v : values) {
    const double d = static_cast<double>(v);
    if (d <= 0) continue;
    lo = any ? std::min(lo, d) : d;
    hi = any ? std::max(hi, d) : d;
    any = true;
  }
  // Zero sits one "step" below the smallest positive value.
  return {lo / 2.0, std::max(hi, lo)};
}

// Drives one strategy: evaluates candidates, tracks the best, reports progress.
class Runner {
 public:
  Runner(Objective& objective, const SearchOptions& options, std::size_t total)
      : objective_(objective), options_(options), total_(total) {}

  void evaluate(const Candidate& c) {
    history_.push_back(Evaluation{c, objective_.evaluate(c)});
    if (best_ == npos || history_.back().step_time_us < history_[best_].step_time_us) best_ = history_.size() - 1;
    if (options_.progress) options_.progress(history_.size(), total_, history_[best_]);
  }
  std::vector<Evaluation>& history() { return history_; }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  Objective& objective_;
  const SearchOptions& options_;
  std::size_t total_;
  std::vector<Evaluation> history_;
  std::size_t best_ = npos;
};

// Candidates in evaluation order for random search and BO's initial design: the requested
// initial points first, then the rest shuffled by the seed.
std::vector<std::size_t> seeded_order(const std::vector<Candidate>& all, const SearchOptions& options) {
  std::vector<std::size_t> order(all.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(options.seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::size_t front = 0;
  for (const auto& wanted : options.initial) {
    auto it = std::find_if(order.begin() + static_cast<std::ptrdiff_t>(front), order.end(),
                           [&](std::size_t i) { return all[i] == wanted; });
    if (it == order.end()) continue;
    std::rotate(order.begin() + static_cast<std::ptrdiff_t>(front), it, it + 1);
    ++front;
  }
  return order;
}

// Worker threads for a grid of n candidates: SearchOptions::threads, or two per hardware thread;
// one where the objective must run alone. Two, because a worker whose candidate needs a price
// another worker is computing waits for it (OnceMap) and leaves its core idle: with one per core,
// `tune --runtime colltune` on dgx-h100:nodes=64 kept 1.25 of 2 cores busy; with two, a spare
// worker takes the idle core (12.9 s -> 9.3 s wall on 2 cores, the same files).
std::size_t grid_workers(const Objective& objective, const SearchOptions& options, std::size_t n) {
  if (!objective.concurrent()) return 1;
  const std::size_t wanted = options.threads > 0 ? options.threads : 2 * std::max(1u, std::thread::hardware_concurrency());
  return worker_count(n, wanted);
}

// 0..n-1 cut into one block per worker and handed out block by block in turn (the first of each
// block, then the second of each, ...): neighbouring candidates share buffers, so threads that
// took neighbours would wait on each other's prices.
std::vector<std::size_t> interleaved_blocks(std::size_t n, std::size_t workers) {
  const std::size_t block = (n + workers - 1) / workers;
  std::vector<std::size_t> order;
  for (std::size_t offset = 0; offset < block; ++offset)
    for (std::size_t b = 0; b < workers; ++b)
      if (b * block + offset < n) order.push_back(b * block + offset);
  return order;
}

// Every candidate, evaluated by several threads where the objective allows it. The history is in
// the candidates' order and holds the same numbers however many threads ran (each candidate's
// time depends on the candidate alone); where evaluations raise errors, the first candidate's in
// order is raised, as a serial run would. Progress counts evaluations as they finish.
std::vector<Evaluation> run_grid(const std::vector<Candidate>& all, Objective& objective,
                                 const SearchOptions& options) {
  const std::size_t workers = grid_workers(objective, options, all.size());
  if (workers == 1) {
    Runner runner(objective, options, all.size());
    for (const auto& c : all) runner.evaluate(c);
    return std::move(runner.history());
  }
  struct Outcome {
    Evaluation evaluation;
    std::exception_ptr error;
  };
  const std::vector<std::size_t> order = interleaved_blocks(all.size(), workers);
  std::mutex progress_mutex;
  std::size_t finished = 0;
  std::optional<Evaluation> best;
  const std::vector<Outcome> outcomes = parallel_map(
      order.size(),
      [&](std::size_t j) {
        Outcome o{Evaluation{all[order[j]]}, nullptr};
        try {
          o.evaluation.step_time_us = objective.evaluate(o.evaluation.candidate);
        } catch (...) {
          o.error = std::current_exception();
          return o;
        }
        if (options.progress) {
          const std::lock_guard<std::mutex> lock(progress_mutex);
          if (!best || o.evaluation.step_time_us < best->step_time_us) best = o.evaluation;
          options.progress(++finished, all.size(), *best);
        }
        return o;
      },
      workers);
  std::vector<Evaluation> history(all.size());
  std::vector<std::exception_ptr> errors(all.size());
  for (std::size_t j = 0; j < order.size(); ++j) {
    history[order[j]] = outcomes[j].evaluation;
    errors[order[j]] = outcomes[j].error;
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return history;
}

std::vector<Evaluation> run_random(const std::vector<Candidate>& all, Objective& objective,
                                   const SearchOptions& options, std::size_t budget) {
  Runner runner(objective, options, budget);
  const auto order = seeded_order(all, options);
  for (std::size_t k = 0; k < budget; ++k) runner.evaluate(all[order[k]]);
  return std::move(runner.history());
}

// GP targets: log step time (ratios matter, not differences); infeasible points get a value
// worse than any feasible one so the surrogate learns to avoid their region.
std::vector<double> gp_targets(const std::vector<Evaluation>& history) {
  double worst = -std::numeric_limits<double>::infinity();
  for (const auto& e : history)
    if (e.feasible()) worst = std::max(worst, std::log(e.step_time_us));
  if (!std::isfinite(worst)) worst = 0.0;
  std::vector<double> y;
  for (const auto& e : history) y.push_back(e.feasible() ? std::log(e.step_time_us) : worst + 1.0);
  return y;
}

int knobs_changed(const Candidate& a, const Candidate& b) {
  int n = 0;
  for (const Knob& k : knobs()) n += k.same(a, b) ? 0 : 1;
  return n;
}

// Bayesian optimisation over the finite candidate set:
//  1. evaluate the initial points, then random ones, max(initial + 3, budget/5) in all (at
//     most the budget);
//  2. repeat: fit the GP to (encode(c), log t) of everything seen; score every unseen candidate
//     (or a seeded sample of 4096 when the space is larger) by expected improvement over the
//     best log t; evaluate the highest score (ties: the first in the seeded order). Every third
//     step scores only the unseen neighbours of the best so far (one knob changed).
std::vector<Evaluation> run_bayes(const SearchSpace& space, const std::vector<Candidate>& all, Objective& objective,
                                  const SearchOptions& options, std::size_t budget) {
  Runner runner(objective, options, budget);
  const auto order = seeded_order(all, options);
  const std::size_t n_init = std::min(budget, std::max<std::size_t>(options.initial.size() + 3, budget / 5));
  std::vector<bool> seen(all.size(), false);
  std::vector<std::vector<double>> encoded(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) encoded[i] = encode(all[i], space);
  std::vector<std::vector<double>> x;  // encoded history, in evaluation order
  for (std::size_t k = 0; k < n_init; ++k) {
    seen[order[k]] = true;
    runner.evaluate(all[order[k]]);
    x.push_back(encoded[order[k]]);
  }
  std::mt19937_64 rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  GaussianProcess gp;
  while (runner.history().size() < budget) {
    const auto y = gp_targets(runner.history());
    gp.fit(x, y);
    const double best = *std::min_element(y.begin(), y.end());
    std::vector<std::size_t> pool;
    for (std::size_t i : order)
      if (!seen[i]) pool.push_back(i);
    if (pool.empty()) break;
    // Every third step looks only next to the incumbent (one knob changed): the global EI
    // explores, this exploits, which the GP alone does poorly on steep, narrow valleys.
    if (runner.history().size() % 3 == 2) {
      const Candidate& incumbent = best_of(runner.history()).candidate;
      std::vector<std::size_t> local;
      for (std::size_t i : pool)
        if (knobs_changed(all[i], incumbent) == 1) local.push_back(i);
      if (!local.empty()) pool = std::move(local);
    }
    if (pool.size() > 4096) {
      std::shuffle(pool.begin(), pool.end(), rng);
      pool.resize(4096);
    }
    std::size_t pick = pool.front();
    double pick_ei = -1;
    for (std::size_t i : pool) {
      const auto p = gp.predict(encoded[i]);
      const double ei = expected_improvement(p.mean, p.sd, best);
      if (ei > pick_ei) {
        pick_ei = ei;
        pick = i;
      }
    }
    seen[pick] = true;
    runner.evaluate(all[pick]);
    x.push_back(encoded[pick]);
  }
  return std::move(runner.history());
}

}  // namespace

std::string_view to_string(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::grid: return "grid";
    case StrategyKind::bayes: return "bayes";
    case StrategyKind::random: return "random";
  }
  return "?";
}

StrategyKind parse_strategy(std::string_view name) {
  if (name == "grid") return StrategyKind::grid;
  if (name == "bayes" || name == "bo") return StrategyKind::bayes;
  if (name == "random") return StrategyKind::random;
  throw Error("--strategy " + std::string(name) + ": unknown (expected grid, bayes or random)");
}

// The knobs' coordinates by encoding (knobs.hpp KnobEncoding): log-scaled ones, then binary
// ones, then one-hot groups, each in table order.
std::vector<double> encode(const Candidate& c, const SearchSpace& space) {
  std::vector<double> x;
  for (const Knob& k : knobs())
    if (k.encoding == KnobEncoding::log_scale) {
      const auto [lo, hi] = positive_range(k.values(space), k.log_floor);
      x.push_back(log_unit(k.scalar(c), lo, hi));
    }
  for (const Knob& k : knobs())
    if (k.encoding == KnobEncoding::binary) x.push_back(k.scalar(c));
  for (const Knob& k : knobs())
    if (k.encoding == KnobEncoding::one_hot) k.one_hot(space, c, x);
  return x;
}

const Evaluation& best_of(const std::vector<Evaluation>& history) {
  if (history.empty()) throw Error("no configuration was evaluated");
  return *std::min_element(history.begin(), history.end(),
                           [](const Evaluation& a, const Evaluation& b) { return a.step_time_us < b.step_time_us; });
}

std::vector<Evaluation> search(StrategyKind kind, const SearchSpace& space, Objective& objective,
                               const SearchOptions& options) {
  auto all = space.enumerate();
  if (options.accept) std::erase_if(all, [&](const Candidate& c) { return !options.accept(c); });
  if (all.empty()) throw Error("the search space is empty (every configuration was pinned away or rejected)");
  const std::size_t budget = std::min(all.size(), options.budget == 0 ? kDefaultBudget : options.budget);
  switch (kind) {
    case StrategyKind::grid: return run_grid(all, objective, options);
    case StrategyKind::random: return run_random(all, objective, options, budget);
    case StrategyKind::bayes: return run_bayes(space, all, objective, options, budget);
  }
  return {};
}

}  // namespace colltune::tuner
