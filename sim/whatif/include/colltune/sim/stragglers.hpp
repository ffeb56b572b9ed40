#pragma once
// Stragglers: ranks that compute slower than the others, fixed or at random per step.
//
// The model. In synchronous data parallelism every fusion buffer's allreduce needs every rank's
// gradient, so in each step the allreduces wait for the slowest rank's backward pass: the step
// runs as the step model's step with the workload's compute (forward, backward, gradient ready
// times) scaled by that step's slowest factor F = max over ranks of (fixed factor x jitter).
// Rank r then waits (F - f_r) x compute each step: the "waiting" share below. The allreduces
// themselves are not slowed (they run on the network and the GPUs' copy engines).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "colltune/sim/step_model.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

// Per-step random compute speed of every rank: each rank's factor multiplied by a draw.
struct Jitter {
  enum class Kind { none, lognormal, normal, uniform };
  Kind kind = Kind::none;
  // lognormal: sigma of log(draw) (median 1); normal: standard deviation of the draw (mean 1,
  // draws below 0.01 clamped there); uniform: half-width (draws in [1-w, 1+w]).
  double param = 0;
};
// "lognormal:0.05", "normal:0.1", "uniform:0.2", "none"; throws colltune::Error naming the text.
Jitter parse_jitter(const std::string& text);

struct StragglerOptions {
  std::vector<double> rank_factor;  // per rank, >= 1 slows it; empty: all 1
  Jitter jitter;
  int steps = 1;           // simulated steps (one is enough without jitter)
  std::uint64_t seed = 1;  // of the jitter's draws
};

// `--slow WHO:FACTORx`, WHO a rank number or a host name of the topology ("3:1.5x",
// "node2:1.2x"); applied to `factors` (one per rank, initially 1). Throws colltune::Error for
// a rank or host the topology does not have or a factor that is not a positive number.
void apply_slow(const std::string& text, const topo::Topology& topology, std::vector<double>& factors);

struct StragglerResult {
  double ideal_us = 0;  // the step without stragglers
  double mean_us = 0, p50_us = 0, p99_us = 0;
  double waiting_fraction = 0;  // of all ranks' step time, spent waiting for the slowest rank
  int steps = 0;
};

// Throws colltune::Error for a factor vector of the wrong length or fewer than one step.
StragglerResult simulate_stragglers(const StepSimulator& simulator, const Workload& workload,
                                    const StepConfig& config, Engine engine, const StragglerOptions& options);

}  // namespace colltune::sim
