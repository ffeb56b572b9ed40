// Stragglers (stragglers.hpp): the slowest rank of each step sets every allreduce's start.
#include "colltune/sim/stragglers.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/topology/subset.hpp"

namespace colltune::sim {
namespace {

double draw(const Jitter& j, std::mt19937_64& rng) {
  switch (j.kind) {
    case Jitter::Kind::none: return 1.0;
    case Jitter::Kind::lognormal: return std::lognormal_distribution<double>(0.0, j.param)(rng);
    case Jitter::Kind::normal: return std::max(0.01, std::normal_distribution<double>(1.0, j.param)(rng));
    case Jitter::Kind::uniform: return std::uniform_real_distribution<double>(1.0 - j.param, 1.0 + j.param)(rng);
  }
  return 1.0;
}

// The q-quantile (0..1) of sorted values, nearest rank.
double quantile(const std::vector<double>& sorted, double q) {
  const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(i, 1, sorted.size()) - 1];
}

// A jitter's parameter and a --slow factor stay where every drawn or given speed is finite and
// positive: a sigma of 100 draws e^400, a factor of 1e308 makes the step infinite.
constexpr parse::Bounds kJitterParam = parse::Bounds::above(0, 10);
constexpr parse::Bounds kSlowFactor = parse::Bounds::closed(1e-3, 1e3);

}  // namespace

Jitter parse_jitter(const std::string& text) {
  if (text == "none") return {};
  const std::size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  Jitter j;
  if (kind == "lognormal") j.kind = Jitter::Kind::lognormal;
  else if (kind == "normal") j.kind = Jitter::Kind::normal;
  else if (kind == "uniform") j.kind = Jitter::Kind::uniform;
  else throw Error("--jitter " + text + ": unknown distribution (lognormal:SIGMA, normal:SD, uniform:HALFWIDTH, none)");
  if (colon == std::string::npos) throw Error("--jitter " + text + ": give its parameter, e.g. " + kind + ":0.05");
  j.param = parse::number(std::string_view(text).substr(colon + 1), "--jitter " + kind, kJitterParam);
  if (j.kind == Jitter::Kind::uniform && j.param >= 1)
    throw Error("--jitter " + text + ": a uniform half-width must be below 1 (speeds stay positive)");
  return j;
}

void apply_slow(const std::string& text, const topo::Topology& topology, std::vector<double>& factors) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw Error("--slow " + text + ": expected WHO:FACTORx, WHO a rank or a host (e.g. 3:1.5x, node2:1.2x)");
  const std::string who = text.substr(0, colon);
  std::string factor_text = text.substr(colon + 1);
  if (!factor_text.empty() && (factor_text.back() == 'x' || factor_text.back() == 'X')) factor_text.pop_back();
  const double factor = parse::number(factor_text, "--slow " + who, kSlowFactor);
  const std::vector<int> ranks = topo::ranks_named(topology, who, topology.num_ranks(), "--slow " + text);
  if (ranks.empty()) throw Error("--slow " + text + ": the topology has no rank or host '" + who + "'");
  for (int r : ranks) factors[static_cast<std::size_t>(r)] *= factor;
}

StragglerResult simulate_stragglers(const StepSimulator& simulator, const Workload& workload,
                                    const StepConfig& config, Engine engine, const StragglerOptions& options) {
  const auto n = static_cast<std::size_t>(simulator.nranks());
  std::vector<double> base = options.rank_factor.empty() ? std::vector<double>(n, 1.0) : options.rank_factor;
  if (base.size() != n)
    throw Error("stragglers: " + std::to_string(base.size()) + " rank factors for " + std::to_string(n) + " ranks");
  if (options.steps < 1 || static_cast<std::size_t>(options.steps) > limits::kMaxStragglerSteps)
    limits::exceeded("--steps " + std::to_string(options.steps), std::to_string(limits::kMaxStragglerSteps) + " steps",
                     limits::kMaxStragglerStepsReason);
  StragglerResult r;
  r.steps = options.steps;
  r.ideal_us = simulator.run(workload, config, engine).step_time_us;
  const double compute = workload.forward_us + workload.backward_us;
  std::mt19937_64 rng(options.seed);
  std::vector<double> times, f(n);
  double waiting = 0, rank_time = 0;
  for (int s = 0; s < options.steps; ++s) {
    for (std::size_t k = 0; k < n; ++k) f[k] = base[k] * draw(options.jitter, rng);
    const double slowest = *std::max_element(f.begin(), f.end());
    const double step = simulator.run(with_compute_scaled(workload, slowest), config, engine).step_time_us;
    times.push_back(step);
    for (double fk : f) waiting += (slowest - fk) * compute;
    rank_time += step * static_cast<double>(n);
  }
  std::sort(times.begin(), times.end());
  for (double t : times) r.mean_us += t / static_cast<double>(times.size());
  r.p50_us = quantile(times, 0.5);
  r.p99_us = quantile(times, 0.99);
  r.waiting_fraction = rank_time > 0 ? waiting / rank_time : 0;
  return r;
}

}  // namespace colltune::sim
