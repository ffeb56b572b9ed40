#pragma once
// One table of algorithms (DESIGN.md: register an algorithm once). Each entry builds a
// Schedule, says whether it applies to a layout ("not applicable" is an answer, not an
// exception), and carries a closed-form cost hint the analytical model prices it with.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/collectives/schedule.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::coll {

class StepSource;  // step_source.hpp

struct AlgoOptions {
  // Pipelining: blocks are cut into chunks of at most this many elements (0 = one chunk).
  std::size_t chunk_elems = 0;
  // hierarchical*: the algorithm used across hosts ("ring", "rhd", "tree", "dbtree").
  std::string inner = "ring";
};

struct Algorithm;

// Per-level link costs and reduction cost, as the analytical model derives them from a
// topology. alpha: us per message; beta: us per byte on the wire; gamma: us per byte reduced.
struct LevelCosts {
  double alpha_intra_us = 0;
  double beta_intra_us_per_byte = 0;
  double alpha_inter_us = 0;
  double beta_inter_us_per_byte = 0;
  double gamma_us_per_byte = 0;
  // A rank's messages inside its host and to other hosts leave (and arrive) through different
  // links (NVLink vs NIC), so they do not share a port; false when one link carries both (flat).
  bool separate_level_ports = false;
  // Prices a part of a schedule on these costs when it has no closed form: hierarchical's inner
  // algorithm across hosts. The cost model sets it (sim::hint_or_price); left empty, hints whose
  // part has no closed form answer nullopt.
  std::function<double(const Algorithm&, const RankLayout&, std::size_t bytes, std::size_t elem_size,
                       const AlgoOptions&)>
      price;
};

struct Algorithm {
  std::string id;           // "ring", "tree", "dbtree", "rhd", "hierarchical", ...
  std::string name;         // human name
  std::string description;  // one line: steps and bytes on the wire
  Collective collective = Collective::allreduce;
  // nullopt when applicable, else the reason it is not.
  std::function<std::optional<std::string>(const RankLayout&, std::size_t count, const AlgoOptions&)> not_applicable;
  std::function<Schedule(const RankLayout&, std::size_t count, const AlgoOptions&)> build;
  // Closed-form cost hint: the predicted time in us for `bytes` bytes of `elem_size`-byte
  // elements, ranks placed by layout, under the machine model of sim/pricer.hpp, of which it is
  // a checked shortcut. Empty, or nullopt for some options, where there is no closed form (the
  // double binary tree's pipeline): the cost model then prices the schedule itself.
  std::function<std::optional<double>(const RankLayout&, std::size_t bytes, std::size_t elem_size, const AlgoOptions&,
                                      const LevelCosts&)>
      cost;
  // Optional: the same schedule generated step by step (step_source.hpp), for algorithms whose
  // stored form grows too large at scale (the ring family). When set, build is materialize(generate).
  std::function<std::unique_ptr<StepSource>(const RankLayout&, std::size_t count, const AlgoOptions&)> generate;
  // Chunk-pipelined schedules without a closed form: the number of pieces the buffer is cut
  // into before chunking (dbtree: its 2 halves), so that pieces x chunk_elems fewer elements
  // make one pipeline round fewer in every piece. The cost model prices a long pipeline from a
  // short one with it (sim::price_pipeline). Empty where that does not hold.
  std::function<std::size_t(const RankLayout&, const AlgoOptions&)> pipeline_pieces;
};

const std::vector<Algorithm>& algorithms();
// Throws colltune::Error naming the id and listing the known ones.
const Algorithm& find_algorithm(std::string_view id);
// The algorithm, after checking it applies to the layout; throws colltune::Error naming an
// unknown id, an empty layout or the reason it is not applicable.
const Algorithm& applicable_algorithm(std::string_view id, const RankLayout& layout, std::size_t count,
                                      const AlgoOptions& options);
// Builds after checking applicability; throws colltune::Error with the reason if not applicable.
Schedule build_schedule(std::string_view id, const RankLayout& layout, std::size_t count,
                        const AlgoOptions& options = {});

}  // namespace colltune::coll
