#pragma once
// The Boost.Graph under a Topology, for code that runs graph algorithms over it (the routing in
// topology/src/graph, tests that check routes by a search of their own). Everything else uses
// topology.hpp, which does not include Boost.Graph: it is the heaviest header of the project,
// and topology.hpp is included by most of it (docs/building.md, "Build time").
#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <mutex>
#include <type_traits>
#include <vector>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

// Devices are vertices, links edges (one per direction), with their figures as properties. The
// graph may be shared by copies of a Topology, and a scaled copy's bandwidths are the edges'
// times its factors: read a link's bandwidth with Topology::bandwidth_of (or Topology::link).
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Device, Link>;
using EdgeId = Graph::edge_descriptor;
static_assert(std::is_same_v<Graph::vertex_descriptor, VertexId>, "a VertexId is the graph's vertex index");

// What a Topology stores: the graph, and link index -> edge (Link::index is the edge's index).
struct GraphStore {
  Graph graph;
  std::vector<EdgeId> links;
  // Each link's properties by index, as its edge holds them (written wherever a link is added,
  // changed or the store copied): read here, one array, rather than through the edge, whose
  // property sits in a list node of its own. A route is read link by link, and at 16,384 GPUs
  // the 2.3 M links of rhd's routes missed the cache on nearly every edge.
  std::vector<Link> by_index;
  // What validate() found sound in this graph's devices and links: for how many hosts (a device
  // names one of them) and with which factors (a scaled copy reads its links' bandwidths and
  // latencies and its devices' reduction rates times them). A copy that shares the graph and differs in neither
  // (with_nvls_switch adds ranks only) skips those checks: 42,000 links on a 512-host machine. The last kCheckedKept
  // are kept (a machine, its efficiency-scaled copy, what-if copies). Topology::own_store(), which every change of the
  // graph goes through, forgets them.
  struct Checked {
    int hosts = 0;
    std::array<double, kLinkKinds> scale{};
    double latency_scale = 1.0;
    double reduce_scale = 1.0;
    bool operator==(const Checked&) const = default;
  };
  static constexpr std::size_t kCheckedKept = 4;
  std::mutex checked_mutex;  // copies sharing the graph may validate at once
  std::vector<Checked> checked;
};

inline const Graph& graph_of(const Topology& topology) { return topology.graph_store().graph; }

}  // namespace colltune::topo
