#pragma once
// Internal: the per-topology route cache behind Topology::route(), and the reusable search
// state that keeps one route query from paying O(devices) to initialise its arrays.
#include <boost/graph/properties.hpp>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

// Route distance: (latency in integer picoseconds, hop count, sum of link indices), compared
// lexicographically. Equal latency sums compare exactly equal, the hop count breaks the tie,
// and the index sum makes the remaining choice canonical, so that every search (early-exit
// A*, full Dijkstra) picks the same route between two devices.
struct Cost {
  std::int64_t ps = 0;
  std::int64_t hops = 0;
  std::int64_t tie = 0;
};
inline constexpr std::int64_t kInfPs = std::numeric_limits<std::int64_t>::max();
inline constexpr Cost kCostInf{kInfPs, kInfPs, kInfPs};
struct CostLess {
  bool operator()(const Cost& a, const Cost& b) const {
    if (a.ps != b.ps) return a.ps < b.ps;
    if (a.hops != b.hops) return a.hops < b.hops;
    return a.tie < b.tie;
  }
};
struct CostPlus {
  Cost operator()(const Cost& a, const Cost& b) const { return {a.ps + b.ps, a.hops + b.hops, a.tie + b.tie}; }
};

// A link's latency in picoseconds; throws colltune::Error for a negative or non-finite one.
std::int64_t latency_ps(const Link& link);

// Lower bounds for the A* search of route() (see route_bounds.cpp). Usable only when hosts
// are "fabric separated": every link stays inside one host or touches a device outside all
// hosts (a switch), as in every preset and NCCL import. Then a route between two hosts must
// reach a host-less device, which gives an admissible bound.
struct RouteBounds {
  bool usable = false;
  std::vector<std::int64_t> exit_ps;   // device -> nearest host-less device, ps
  std::vector<std::int64_t> enter_ps;  // nearest host-less device -> device, ps
};
RouteBounds compute_route_bounds(const Graph& g);

// Search arrays kept "at rest" between searches (dist = infinity, color = white); a search
// records the vertices it discovers and reset() restores only those.
struct SearchScratch {
  std::vector<Cost> dist;
  std::vector<Cost> estimate;  // A*: dist + lower bound to the target (written before read)
  std::vector<boost::default_color_type> color;
  std::vector<EdgeId> in_edge;  // the edge that last improved each vertex (valid where reached)
  std::vector<VertexId> touched;

  void ensure(std::size_t vertices) {
    if (dist.size() == vertices) return;
    dist.assign(vertices, kCostInf);
    estimate.assign(vertices, kCostInf);
    color.assign(vertices, boost::white_color);
    in_edge.assign(vertices, EdgeId{});
    touched.clear();
  }
  void reset() {
    for (VertexId v : touched) {
      dist[v] = kCostInf;
      color[v] = boost::white_color;
    }
    touched.clear();
  }
};

struct Topology::RouteCache {
  std::mutex mutex;
  // key = src_rank * num_ranks + dst_rank. unordered_map never moves its elements, so the
  // references route() hands out stay valid while the topology lives and is not modified.
  std::unordered_map<std::uint64_t, Path> routes;
  SearchScratch scratch;               // used under `mutex`
  std::optional<RouteBounds> bounds;   // computed by the first route() call
};

}  // namespace colltune::topo
