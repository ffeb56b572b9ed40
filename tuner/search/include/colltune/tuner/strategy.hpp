#pragma once
// Search strategies over a SearchSpace: exhaustive grid (cheap objectives), random, and
// Bayesian optimisation (expensive objectives). All are deterministic for a given seed, so MPI
// ranks running the measured objective walk the same sequence.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "colltune/tuner/objective.hpp"
#include "colltune/tuner/space.hpp"

namespace colltune::tuner {

enum class StrategyKind { grid, bayes, random };
std::string_view to_string(StrategyKind kind);
// "grid" | "bayes" | "random"; throws colltune::Error listing them.
StrategyKind parse_strategy(std::string_view name);

struct SearchOptions {
  // Evaluations for bayes/random (0 = 30); grid evaluates the whole space and ignores it.
  std::size_t budget = 0;
  std::uint64_t seed = 1;
  // Evaluated first when they are in the space (the baseline, so the result is never worse).
  std::vector<Candidate> initial;
  // When set, candidates it rejects are not searched (fp16 over the error limit).
  std::function<bool(const Candidate&)> accept;
  // Called after every evaluation with (done, total, best so far); under the grid's threads one
  // call at a time, in the order evaluations finish.
  std::function<void(std::size_t, std::size_t, const Evaluation&)> progress;
  // Threads evaluating the grid where the objective may run concurrently (Objective::concurrent):
  // 0 = two per hardware thread (strategy.cpp, grid_workers). The result does not depend on it.
  std::size_t threads = 0;
};

inline constexpr std::size_t kDefaultBudget = 30;

// Returns every evaluation in the order made. Throws colltune::Error for an empty space.
std::vector<Evaluation> search(StrategyKind kind, const SearchSpace& space, Objective& objective,
                               const SearchOptions& options);

// The best feasible evaluation (lowest step time); the first one if none is feasible.
const Evaluation& best_of(const std::vector<Evaluation>& history);

// The Gaussian process's view of a candidate: log2 fusion threshold, log10 cycle time and log2
// chunk normalised to [0,1] over the space's ranges, then fp16 and hierarchical as 0/1, then a
// one-hot of the algorithm.
std::vector<double> encode(const Candidate& candidate, const SearchSpace& space);

}  // namespace colltune::tuner
