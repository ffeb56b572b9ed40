#pragma once
// Per-message-size algorithm tables: for each size range, the algorithm (and chunking) the
// analytical cost model predicts fastest on this topology. They become nccl_tuner.conf rows
// and the "algorithms" section of colltune.json.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/common/units.hpp"
#include "colltune/sim/cost_model.hpp"

namespace colltune::tuner {

// The last range ends here: NCCL's example tuner documents 4294967295 as "every size".
inline constexpr std::size_t kTableMaxBytes = 4294967295ULL;

struct AlgoChoice {
  std::string algorithm;    // registry id ("ring", "dbtree", "hierarchical", ...)
  std::string inner;        // cross-host algorithm of hierarchical ones, else empty
  std::size_t chunk_bytes = 0;
  bool operator==(const AlgoChoice&) const = default;
};

// "ring", "hierarchical(rhd)": the algorithm with its cross-host one, for labels.
std::string describe(const AlgoChoice& choice);

struct SizeRange {
  std::size_t min_bytes = 0;  // inclusive
  std::size_t max_bytes = 0;  // inclusive
  // The registry algorithm (NCCL tables: the colltune schedule that prices the NCCL cell, or
  // "nccl" where NCCL's own pick stands).
  AlgoChoice choice;
  // NCCL protocol (tuner CSV spelling: ll, ll128, simple); colltune's own algorithms run Simple's
  // costs (full bandwidth, per-step latency).
  std::string protocol = "simple";
  std::size_t sampled_bytes = 0;  // the largest size sampled in the range
  double time_us = 0;             // predicted time at sampled_bytes
  // NCCL tables: colltune's price of NCCL's own pick at sampled_bytes (< 0: none); the row's
  // predicted gain over NCCL is nccl_pick_us / time_us - 1.
  double nccl_pick_us = -1;
  // NCCL tables: NCCL's algorithm (tuner CSV spelling: ring, tree, nvls, ...); empty otherwise.
  std::string nccl_algorithm;
};

struct AlgoTableOptions {
  // When non-empty, exactly these choices (algorithms, hierarchical and chunks are then unused).
  std::vector<AlgoChoice> choices;
  std::vector<std::string> algorithms;   // flat allreduce ids to consider
  bool hierarchical = true;              // also "hierarchical" over each flat one as inner
  std::vector<std::size_t> chunks{0};    // chunk sizes to consider (bytes)
  bool fp16 = false;
  std::size_t min_bytes = 1 * KiB;       // sampled at powers of two from min to max
  std::size_t max_bytes = 1 * GiB;
};

// Samples every power of two in [min, max]; a sample s covers (previous sample, s]; the first
// range starts at 0 and the last ends at kTableMaxBytes; equal neighbours are merged.
// Throws colltune::Error when nothing applies.
std::vector<SizeRange> build_algo_table(const sim::CostModel& model, const AlgoTableOptions& options);

// The row covering `bytes` (rows run from 0 upwards without gaps; larger sizes take the last).
// Adds `best`, the choice sampled at `bytes`, to a table built by doubling sizes: it extends
// the last range when it chose the same (algorithm, NCCL algorithm, protocol), else it starts a
// new one from the byte after the previous sample.
void add_sample(std::vector<SizeRange>& table, SizeRange best, std::size_t bytes, std::size_t previous_bytes);

const SizeRange& row_for(const std::vector<SizeRange>& table, std::size_t bytes);

// Predicted busbw (GB/s, nccl-tests factor 2(p-1)/p) of one algorithm at one size; 0 when it
// does not apply.
double predicted_busbw(const sim::CostModel& model, const AlgoChoice& choice, std::size_t bytes, bool fp16);

}  // namespace colltune::tuner
