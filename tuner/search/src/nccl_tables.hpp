#pragma once
// Internal: the per-size NCCL tables the tuner's NCCL and Horovod runtimes run with, every cell
// priced by the one NCCL price path (sim::NcclPricer): colltune's schedule of the cell with the
// protocol's costs, on the machine as priced.
#include <string>
#include <vector>

#include "colltune/sim/nccl_price.hpp"
#include "colltune/tuner/algo_table.hpp"

namespace colltune::tuner {

// NCCL's own pick per size: NCCL's algorithm and protocol (choice.algorithm kNcclChoice,
// nccl_algorithm NCCL's CSV name), priced.
std::vector<SizeRange> nccl_choice_table(const sim::NcclPricer& pricer);

// One NCCL algorithm at every size (a forced NCCL_ALGO: `ring`, `dbtree`), its fastest protocol
// per size by colltune's price. Throws colltune::Error where NCCL cannot run it at some size.
std::vector<SizeRange> nccl_algorithm_table(const sim::NcclPricer& pricer, sim::NcclAlgo algo,
                                            const std::string& registry_id);

// Where colltune predicts NCCL's own pick slower than another cell by more than `margin` (a
// fraction): per size, every algorithm x protocol NCCL can run here that a colltune schedule
// prices; a range overriding NCCL's pick takes the fastest cell (a plugin row), the other ranges
// keep NCCL's own choice (choice.algorithm kNcclChoice, no row).
std::vector<SizeRange> nccl_override_table(const sim::NcclPricer& pricer, double margin);

// The rows of a table colltune's plugin hands NCCL (those that override NCCL's choice).
std::vector<SizeRange> plugin_rows(const std::vector<SizeRange>& table);

// A buffer priced as the table's row for its size says: the row's cell, or NCCL's own pick.
sim::NcclPrice price_by_table(const sim::NcclPricer& pricer, const std::vector<SizeRange>& table, std::size_t bytes);

}  // namespace colltune::tuner
