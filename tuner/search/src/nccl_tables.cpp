// The tuner's per-size NCCL tables (nccl_tables.hpp), every cell priced by the NCCL price path.
#include "nccl_tables.hpp"

#include <cmath>
#include <limits>

#include "colltune/common/error.hpp"
#include "colltune/common/parallel.hpp"
#include "colltune/tuner/space.hpp"

namespace colltune::tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr auto kAllreduce = sim::NcclColl::allreduce;

// A sample of a table: the cell at `bytes` with colltune's price of it.
SizeRange cell_row(const sim::NcclPrice& p, std::size_t bytes) {
  SizeRange r;
  r.max_bytes = r.sampled_bytes = bytes;
  r.choice = AlgoChoice{p.schedule, "", 0};
  r.nccl_algorithm = std::string(sim::to_string(p.nccl.algo));
  r.protocol = std::string(sim::to_string(p.nccl.proto));
  r.time_us = p.time_us;
  return r;
}

// The fastest cell of `algos` x every protocol at `bytes` that NCCL can run (its model's
// table has it: NCCL_ALGO and NCCL_PROTO leave it on, and the machine has it; a tuner plugin
// cannot turn on a cell NCCL left off) and a colltune schedule prices; time +infinity where
// there is none.
SizeRange fastest_cell(const sim::NcclPricer& pricer, const std::vector<sim::NcclAlgo>& algos, std::size_t bytes) {
  SizeRange best;
  best.time_us = kInf;
  for (sim::NcclAlgo a : algos)
    for (sim::NcclProto p : sim::kNcclProtos) {
      if (!(pricer.model().bandwidth(kAllreduce, a, p) > 0) || pricer.model().unavailable(kAllreduce, a)) continue;
      const sim::NcclPrice price = pricer.price(kAllreduce, a, p, bytes);
      if (price.schedule.empty() || !sim::clearly_faster(price.time_us, best.time_us)) continue;
      best = cell_row(price, bytes);
    }
  return best;
}

// Samples powers of two from 1 KiB to 1 GiB; `sample(bytes)` gives the row at each (the sizes
// are priced on several threads: the pricer's caches are shared safely).
template <typename Sample>
std::vector<SizeRange> sampled_table(Sample sample) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = 1 * KiB; s <= 1 * GiB; s *= 2) sizes.push_back(s);
  const std::vector<SizeRange> rows = parallel_map(sizes.size(), [&](std::size_t i) { return sample(sizes[i]); });
  std::vector<SizeRange> table;
  std::size_t previous = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    add_sample(table, rows[i], sizes[i], previous);
    previous = sizes[i];
  }
  table.back().max_bytes = std::max(table.back().max_bytes, kTableMaxBytes);
  return table;
}

SizeRange nccl_pick_row(const sim::NcclPricer& pricer, std::size_t bytes) {
  const sim::NcclPrice pick = pricer.price(kAllreduce, bytes);
  SizeRange r = cell_row(pick, bytes);
  r.choice = AlgoChoice{std::string(kNcclChoice), "", 0};
  r.nccl_pick_us = pick.time_us;
  return r;
}

}  // namespace

std::vector<SizeRange> nccl_choice_table(const sim::NcclPricer& pricer) {
  return sampled_table([&](std::size_t s) { return nccl_pick_row(pricer, s); });
}

std::vector<SizeRange> nccl_algorithm_table(const sim::NcclPricer& pricer, sim::NcclAlgo algo,
                                            const std::string& registry_id) {
  return sampled_table([&](std::size_t s) {
    SizeRange best = fastest_cell(pricer, {algo}, s);
    if (!std::isfinite(best.time_us))
      throw Error("NCCL cannot run " + registry_id + " (" + std::string(sim::nccl_env_name(algo)) +
                  ") for an allreduce of " + format_bytes(s) + " here");
    best.nccl_pick_us = pricer.price(kAllreduce, s).time_us;
    return best;
  });
}

std::vector<SizeRange> nccl_override_table(const sim::NcclPricer& pricer, double margin) {
  return sampled_table([&](std::size_t s) {
    SizeRange pick = nccl_pick_row(pricer, s);
    SizeRange best = fastest_cell(pricer, std::vector<sim::NcclAlgo>(sim::kNcclAlgos.begin(), sim::kNcclAlgos.end()), s);
    if (!(best.time_us < pick.time_us * (1.0 - margin))) return pick;
    best.nccl_pick_us = pick.time_us;
    return best;
  });
}

std::vector<SizeRange> plugin_rows(const std::vector<SizeRange>& table) {
  std::vector<SizeRange> rows;
  for (const SizeRange& r : table)
    if (r.choice.algorithm != kNcclChoice) rows.push_back(r);
  return rows;
}

sim::NcclPrice price_by_table(const sim::NcclPricer& pricer, const std::vector<SizeRange>& table, std::size_t bytes) {
  const SizeRange& row = row_for(table, bytes);
  if (row.choice.algorithm == kNcclChoice) return pricer.price(kAllreduce, bytes);
  return pricer.price(kAllreduce, sim::parse_nccl_algo(row.nccl_algorithm), sim::parse_nccl_proto(row.protocol), bytes);
}

}  // namespace colltune::tuner
