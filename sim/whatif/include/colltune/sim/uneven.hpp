#pragma once
// Uneven data: ranks with fewer batches per epoch than others, under Horovod's hvd.join().
//
// The model (docs/failures.md, "Uneven data"). A rank that has run out of batches calls
// hvd.join(); from then on it takes part in every allreduce the others start, contributing a
// tensor of zeros (Horovod: horovod/common/tensor_queue.cc, GetTensorEntriesFromResponse, and
// controller.cc, the joined_size count), so each allreduce still runs over every rank and costs
// what it costs at the full rank count. The epoch runs as many steps as the largest rank's
// batch count. Step s is the step model's step with the compute of the slowest rank still
// computing in it (--slow factors; joined ranks no longer compute), i.e. the workload scaled by
// max{f_r : rank r has at least s batches}.
#include <cstdint>
#include <string>
#include <vector>

#include "colltune/sim/step_model.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {


// `--uneven WHO:N`: WHO a rank number or a host name (every rank on it), N its batches per
// epoch; applied to `batches` (one per rank). Throws colltune::Error for a rank or host the
// topology does not have, or an N that is not a whole number >= 0.
void apply_uneven(const std::string& text, const topo::Topology& topology, std::vector<long>& batches);

// `--uneven-spread X`: every rank's `batches` moved by a whole number drawn uniformly from
// [-X, X] (X a count, or "P%" of `batches`), seeded. Throws colltune::Error for a malformed X or
// one that could make a count negative (X > batches).
std::vector<long> spread_batches(long batches, const std::string& spread, int nranks, std::uint64_t seed);

// `total` batches dealt as evenly as whole batches allow: total / n each, the first total % n
// ranks one more.
std::vector<long> even_split(long total, int nranks);

struct UnevenResult {
  long total_batches = 0;
  long steps = 0;             // the largest rank's batches: the epoch's steps
  long even_steps = 0;        // the same with the even split
  double epoch_us = 0;        // with the uneven split
  double even_epoch_us = 0;   // with the even split of the same total
  double loss_us = 0;         // epoch_us - even_epoch_us
  long idle_rank_steps = 0;   // sum over ranks of (steps - its batches): steps spent joined
  double idle_fraction = 0;   // idle_rank_steps / (ranks x steps)
  std::vector<long> batches;  // per rank, as priced
};

// The epoch with `batches` per rank, and with the even split of their sum. `rank_factor`: per
// rank compute slowdown (>= 1 slows; empty: all 1). Throws colltune::Error for vectors of the
// wrong length or a negative count.
UnevenResult simulate_uneven(const StepSimulator& simulator, const Workload& workload, const StepConfig& config,
                             Engine engine, const std::vector<long>& batches,
                             const std::vector<double>& rank_factor = {});

}  // namespace colltune::sim
