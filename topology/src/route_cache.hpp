#pragma once
// Internal: the per-topology route cache behind Topology::route().
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

struct Topology::RouteCache {
  std::mutex mutex;
  // key = src_rank * num_ranks + dst_rank. unordered_map never moves its elements, so the
  // references route() hands out stay valid while the topology lives and is not modified.
  std::unordered_map<std::uint64_t, Path> routes;
};

}  // namespace colltune::topo
