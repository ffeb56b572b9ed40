#pragma once
// The analytical cost model: prices a registered algorithm on a topology with the closed-form
// cost hint of its registry entry, using alpha/beta per link level derived from the topology's
// routes and gamma from the devices' reduction rate. Cheap (microseconds): the tuner sweeps it.
#include <cstddef>
#include <string>

#include "colltune/collectives/registry.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

struct CollectiveRequest {
  std::string algorithm = "ring";  // registry id
  std::size_t bytes = 0;           // payload per rank (the allreduce buffer size)
  std::size_t elem_size = 4;       // bytes per element (4 for fp32)
  bool fp16_compress = false;      // halves wire bytes of fp32 payloads, adds cast time
  coll::AlgoOptions options;
};

// Alpha/beta per level and gamma, derived once per topology and reused.
struct CostModel {
  explicit CostModel(const topo::Topology& topology);
  coll::LevelCosts levels;
  RankLayout layout;
  double cast_us_per_byte = 0;  // fp32<->fp16 conversion cost
  // Predicted time (us) of one collective; +infinity when the algorithm is not applicable.
  double time_us(const CollectiveRequest& request) const;
};

}  // namespace colltune::sim
