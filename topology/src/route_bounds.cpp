// Lower bounds that let route() run A* instead of plain Dijkstra on large machines.
//
// With hosts fabric separated (route_cache.hpp), a route from device v in host A to device d
// in another host B must first reach some host-less device (>= exit(v)) and then get from a
// host-less device to d (>= enter(d)). So h(v) = exit(v) + enter(d) for v in A != B,
// enter(d) for host-less v, and 0 inside B is admissible (never above the true remaining
// latency), which is all A* needs to return the optimal route when it settles d; Boost's
// astar_search reopens vertices, so the bound need not be consistent. exit() and enter() come
// from two multi-source Dijkstra runs (reverse and forward graph) from all host-less devices.
// On a 4096-GPU fat-tree this keeps a cross-leaf query from settling every NIC of the cluster.
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <cmath>
#include <functional>

#include "colltune/common/error.hpp"
#include "route_cache.hpp"
#include "text_util.hpp"

namespace colltune::topo {
namespace {

bool fabric_separated(const Graph& g) {
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const int a = g[boost::source(*it, g)].host, b = g[boost::target(*it, g)].host;
    if (a != b && a >= 0 && b >= 0) return false;
  }
  return true;
}

// Shortest latency (ps) from any of `sources` to every vertex of `graph` (a Graph or its reverse).
template <typename G>
std::vector<std::int64_t> nearest_from(const G& graph, const std::vector<VertexId>& sources) {
  std::vector<std::int64_t> dist(boost::num_vertices(graph));
  using E = typename boost::graph_traits<G>::edge_descriptor;
  auto weight = boost::make_function_property_map<E, std::int64_t>([&graph](const E& e) { return latency_ps(graph[e]); });
  auto saturating_plus = [](std::int64_t a, std::int64_t b) { return a > kInfPs - b ? kInfPs : a + b; };
  boost::dijkstra_shortest_paths(graph, sources.begin(), sources.end(), boost::dummy_property_map(),
                                 boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, graph)),
                                 weight, boost::get(boost::vertex_index, graph), std::less<std::int64_t>(),
                                 saturating_plus, kInfPs, std::int64_t{0}, boost::default_dijkstra_visitor());
  return dist;
}

}  // namespace

std::int64_t latency_ps(const Link& link) {
  if (!(link.latency_us >= 0) || !(link.latency_us < 1e9))
    throw Error("link " + std::to_string(link.index) + ": latency must be finite and >= 0, got " +
                detail::fmt_num(link.latency_us) + " us");
  return std::llround(link.latency_us * 1e6);
}

RouteBounds compute_route_bounds(const Graph& g) {
  RouteBounds b;
  std::vector<VertexId> hostless;
  for (VertexId v = 0; v < boost::num_vertices(g); ++v)
    if (g[v].host < 0) hostless.push_back(v);
  if (hostless.empty() || !fabric_separated(g)) return b;
  b.exit_ps = nearest_from(boost::make_reverse_graph(g), hostless);
  b.enter_ps = nearest_from(g, hostless);
  b.usable = true;
  return b;
}

}  // namespace colltune::topo
