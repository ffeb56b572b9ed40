#pragma once
// Internal: the per-topology route cache behind Topology::route(), and the reusable search
// state that keeps one route query from paying O(devices) to initialise its arrays.
#include <cstdint>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

// Route distance: (latency in integer picoseconds, hop count, sum of link indices), compared
// lexicographically. Equal latency sums compare exactly equal, the hop count breaks the tie,
// and the index sum nearly always makes the remaining choice unique. Where it does not (equal
// index sums, e.g. on a torus), route() still picks what Dijkstra's order picks (routing.cpp),
// so every search (route()'s bidirectional one, routes_from(), device_route()) agrees.
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

// The state of route()'s search (routing.cpp): a forward and a backward half, kept at rest
// between queries (dist = infinity, heap_pos = kNotQueued, cross_first = kNone) so that a query
// pays only for the vertices it reaches. A vertex is "settled" by a half when its dist there is
// finite and it is no longer queued there.
struct BidirectionalScratch {
  static constexpr std::size_t kNotQueued = static_cast<std::size_t>(-1);  // d_ary_heap's "absent"
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Half {
    std::vector<Cost> dist;             // forward: from the source; backward: to the destination
    std::vector<EdgeId> tree_edge;      // forward: the edge into v; backward: the edge out of v
    std::vector<std::size_t> heap_pos;  // position in this half's heap, kNotQueued when absent
  };
  Half forward, backward;
  std::vector<VertexId> touched;           // vertices whose state a query changed
  std::vector<VertexId> backward_settled;  // in settling order
  // The in-edges of the backward-settled vertices, listed per source vertex: cross_first[x]
  // indexes `cross`, whose entries chain through `next`.
  struct CrossEdge {
    EdgeId edge;
    std::size_t next;
  };
  std::vector<std::size_t> cross_first;
  std::vector<CrossEdge> cross;

  void ensure(std::size_t vertices) {
    if (forward.dist.size() == vertices) return;
    for (Half* h : {&forward, &backward}) {
      h->dist.assign(vertices, kCostInf);
      h->tree_edge.assign(vertices, EdgeId{});
      h->heap_pos.assign(vertices, kNotQueued);
    }
    cross_first.assign(vertices, kNone);
    touched.clear();
    backward_settled.clear();
    cross.clear();
  }
  // Records v the first time either half reaches it (call before writing its dist).
  void touch(VertexId v) {
    if (forward.dist[v].ps == kInfPs && backward.dist[v].ps == kInfPs) touched.push_back(v);
  }
  void reset() {
    for (VertexId v : touched) {
      for (Half* h : {&forward, &backward}) {
        h->dist[v] = kCostInf;
        h->heap_pos[v] = kNotQueued;
      }
      cross_first[v] = kNone;
    }
    touched.clear();
    backward_settled.clear();
    cross.clear();
  }
};

struct Topology::RouteCache {
  std::mutex mutex;
  // key = src_rank * num_ranks + dst_rank. unordered_map never moves its elements, so the
  // references route() hands out stay valid while the topology lives and is not modified.
  std::unordered_map<std::uint64_t, Path> routes;
  BidirectionalScratch scratch;        // route()'s search state, used under `mutex`
};

}  // namespace colltune::topo
