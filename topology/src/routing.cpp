// Route queries on the device graph, all with Boost.Graph's Dijkstra:
//  - route(): minimum total latency, ties toward fewer hops. The distance is the pair
//    (latency in integer picoseconds, hop count) compared lexicographically, so equal-latency
//    sums compare exactly equal and the hop count decides.
//  - widest_bandwidth(): the max-min (bottleneck) path: Dijkstra with "larger is better" as
//    the comparison and min() as the combination.
// Both stop as soon as the destination is settled (its distance is final then), which keeps a
// query on a 4096-GPU fat-tree to the neighbourhood of the two ranks.
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"
#include "route_cache.hpp"

namespace colltune::topo {
namespace {

struct Cost {
  std::int64_t ps = 0;  // latency in picoseconds
  std::int64_t hops = 0;
};
struct CostLess {
  bool operator()(const Cost& a, const Cost& b) const { return a.ps < b.ps || (a.ps == b.ps && a.hops < b.hops); }
};
struct CostPlus {
  Cost operator()(const Cost& a, const Cost& b) const { return {a.ps + b.ps, a.hops + b.hops}; }
};
constexpr Cost kCostInf{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max()};

struct Found {};  // thrown by the visitor to end a search once the destination is settled

// Records the edge that last improved each vertex (a multigraph needs the edge, not just the
// predecessor vertex) and stops the search when `stop_at` is popped from the queue.
class RouteVisitor : public boost::default_dijkstra_visitor {
 public:
  RouteVisitor(std::vector<EdgeId>& in_edge, VertexId stop_at) : in_edge_(&in_edge), stop_at_(stop_at) {}
  void edge_relaxed(const EdgeId& e, const Graph& g) const { (*in_edge_)[boost::target(e, g)] = e; }
  void examine_vertex(VertexId v, const Graph&) const {
    if (v == stop_at_) throw Found{};
  }

 private:
  std::vector<EdgeId>* in_edge_;
  VertexId stop_at_;
};

Cost edge_cost(const Link& link) {
  if (!(link.latency_us >= 0) || !(link.latency_us < 1e9))
    throw Error("link " + std::to_string(link.index) + ": latency must be finite and >= 0, got " +
                std::to_string(link.latency_us) + " us");
  return {std::llround(link.latency_us * 1e6), 1};
}

struct SearchResult {
  std::vector<Cost> dist;
  std::vector<EdgeId> in_edge;
};

// Minimum-(latency, hops) search from `src`; stops early once `stop_at` is settled
// (pass null_vertex() to settle everything).
SearchResult latency_search(const Graph& g, VertexId src, VertexId stop_at) {
  const std::size_t n = boost::num_vertices(g);
  SearchResult r{std::vector<Cost>(n), std::vector<EdgeId>(n)};
  auto index = boost::get(boost::vertex_index, g);
  auto weight = boost::make_function_property_map<EdgeId, Cost>([&g](const EdgeId& e) { return edge_cost(g[e]); });
  try {
    boost::dijkstra_shortest_paths(
        g, src,
        boost::weight_map(weight)
            .distance_map(boost::make_iterator_property_map(r.dist.begin(), index))
            .distance_compare(CostLess{})
            .distance_combine(CostPlus{})
            .distance_inf(kCostInf)
            .distance_zero(Cost{})
            .visitor(RouteVisitor(r.in_edge, stop_at)));
  } catch (const Found&) {
  }
  return r;
}

// Walks the recorded in-edges back from `dst` to `src`; nullopt when `dst` was not reached.
std::optional<Path> build_path(const Graph& g, const SearchResult& r, VertexId src, VertexId dst) {
  Path path;
  path.bottleneck_gbps = std::numeric_limits<double>::infinity();
  if (src == dst) return path;
  if (r.dist[dst].ps == kCostInf.ps) return std::nullopt;
  for (VertexId v = dst; v != src; v = boost::source(r.in_edge[v], g)) {
    const Link& l = g[r.in_edge[v]];
    path.links.push_back(l.index);
    path.bottleneck_gbps = std::min(path.bottleneck_gbps, l.bandwidth_gbps);
    path.latency_us += l.latency_us;
  }
  std::reverse(path.links.begin(), path.links.end());
  return path;
}

std::string no_path(int src, int dst) {
  return "no path from rank " + std::to_string(src) + " to rank " + std::to_string(dst) +
         " (the topology is disconnected)";
}

}  // namespace

const Path& Topology::route(int src_rank, int dst_rank) const {
  check_rank(src_rank, "route: source");
  check_rank(dst_rank, "route: destination");
  RouteCache& c = cache();
  const auto key = static_cast<std::uint64_t>(src_rank) * static_cast<std::uint64_t>(num_ranks()) +
                   static_cast<std::uint64_t>(dst_rank);
  std::lock_guard lock(c.mutex);
  if (auto it = c.routes.find(key); it != c.routes.end()) return it->second;
  const VertexId s = rank_device_[static_cast<std::size_t>(src_rank)];
  const VertexId d = rank_device_[static_cast<std::size_t>(dst_rank)];
  std::optional<Path> path = build_path(graph_, latency_search(graph_, s, d), s, d);
  if (!path) throw Error(no_path(src_rank, dst_rank));
  return c.routes.emplace(key, std::move(*path)).first->second;
}

std::vector<Path> Topology::routes_from(int src_rank) const {
  check_rank(src_rank, "routes_from: source");
  const VertexId s = rank_device_[static_cast<std::size_t>(src_rank)];
  const SearchResult r = latency_search(graph_, s, Graph::null_vertex());
  std::vector<Path> out;
  out.reserve(static_cast<std::size_t>(num_ranks()));
  for (int dst = 0; dst < num_ranks(); ++dst) {
    check_rank(dst, "routes_from: destination");
    std::optional<Path> path = build_path(graph_, r, s, rank_device_[static_cast<std::size_t>(dst)]);
    if (!path) throw Error(no_path(src_rank, dst));
    out.push_back(std::move(*path));
  }
  return out;
}

Path Topology::device_route(VertexId from, VertexId to) const {
  if (from >= num_devices() || to >= num_devices())
    throw Error("device_route: device index " + std::to_string(std::max(from, to)) + " does not exist");
  std::optional<Path> path = build_path(graph_, latency_search(graph_, from, to), from, to);
  if (!path) throw Error("no path from device '" + graph_[from].id + "' to device '" + graph_[to].id + "'");
  return std::move(*path);
}

double Topology::widest_bandwidth(int src_rank, int dst_rank) const {
  check_rank(src_rank, "widest_bandwidth: source");
  check_rank(dst_rank, "widest_bandwidth: destination");
  const VertexId s = rank_device_[static_cast<std::size_t>(src_rank)];
  const VertexId d = rank_device_[static_cast<std::size_t>(dst_rank)];
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (s == d) return kInf;
  std::vector<double> width(num_devices());
  std::vector<EdgeId> in_edge(num_devices());
  try {
    boost::dijkstra_shortest_paths(
        graph_, s,
        boost::weight_map(boost::get(&Link::bandwidth_gbps, graph_))
            .distance_map(boost::make_iterator_property_map(width.begin(), boost::get(boost::vertex_index, graph_)))
            .distance_compare(std::greater<double>())                                  // wider is better
            .distance_combine([](double a, double b) { return std::min(a, b); })  // bottleneck
            .distance_inf(-1.0)                                                         // not reached
            .distance_zero(kInf)                                                        // at the source
            .visitor(RouteVisitor(in_edge, d)));
  } catch (const Found&) {
  }
  if (width[d] < 0) throw Error(no_path(src_rank, dst_rank));
  return width[d];
}

}  // namespace colltune::topo
