// Route queries on the device graph, all with Boost.Graph searches:
//  - route(): minimum total latency, ties toward fewer hops (Cost in route_cache.hpp). It runs
//    Boost's A* (astar_search_no_init) toward the destination with the admissible lower
//    bounds of route_bounds.cpp (plain Dijkstra order when the topology has none) and stops as
//    soon as the destination is settled. Search arrays are reused between queries and only the
//    vertices a query reached are reset, so a query costs what it explores, not O(devices).
//  - routes_from(), device_route(): the same cost with dijkstra_shortest_paths_no_init.
//  - widest_bandwidth(): the max-min (bottleneck) path: Dijkstra with "larger is better" as
//    the comparison and min() as the combination.
#include <boost/graph/astar_search.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <algorithm>
#include <functional>
#include <optional>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"
#include "route_cache.hpp"

namespace colltune::topo {
namespace {

struct Found {};  // thrown by a visitor to end a search once the destination is settled

// Records the edge that last improved each vertex (a multigraph needs the edge, not just the
// predecessor vertex) and every discovered vertex (for SearchScratch::reset), and stops the
// search when `stop_at` is popped from the queue: its distance is final then.
class RouteVisitor : public boost::default_astar_visitor {
 public:
  RouteVisitor(SearchScratch& scratch, VertexId stop_at) : s_(&scratch), stop_at_(stop_at) {}
  void discover_vertex(VertexId v, const Graph&) const { s_->touched.push_back(v); }
  void edge_relaxed(const EdgeId& e, const Graph& g) const { s_->in_edge[boost::target(e, g)] = e; }
  void examine_vertex(VertexId v, const Graph&) const {
    if (v == stop_at_) throw Found{};
  }

 private:
  SearchScratch* s_;
  VertexId stop_at_;
};

// For widest_bandwidth(): only the early exit.
class StopVisitor : public boost::default_dijkstra_visitor {
 public:
  explicit StopVisitor(VertexId stop_at) : stop_at_(stop_at) {}
  void examine_vertex(VertexId v, const Graph&) const {
    if (v == stop_at_) throw Found{};
  }

 private:
  VertexId stop_at_;
};

// The A* heuristic: a lower bound on the cost from a vertex to `target` (route_bounds.cpp).
class LowerBound {
 public:
  LowerBound(const Graph& g, const RouteBounds& b, VertexId target) : g_(&g), b_(&b), host_(g[target].host) {
    if (b.usable && host_ >= 0) enter_ = std::min(b.enter_ps[target], kFar);
  }
  Cost operator()(VertexId v) const {
    if (!b_->usable || host_ < 0) return {};
    const int h = (*g_)[v].host;
    if (h == host_) return {};
    if (h < 0) return {enter_, 0, 0};
    return {std::min(b_->exit_ps[v], kFar) + enter_, 0, 0};
  }

 private:
  static constexpr std::int64_t kFar = kInfPs / 8;  // "unreachable", still safe to add to
  const Graph* g_;
  const RouteBounds* b_;
  int host_;
  std::int64_t enter_ = 0;
};

auto weight_map(const Graph& g) {
  return boost::make_function_property_map<EdgeId, Cost>([&g](const EdgeId& e) {
    return Cost{latency_ps(g[e]), 1, static_cast<std::int64_t>(g[e].index)};
  });
}

template <typename Search>
void run_search(SearchScratch& s, Search&& search) {
  try {
    search();
  } catch (const Found&) {
  } catch (...) {
    s.reset();
    throw;
  }
}

// A* from `src` to `dst` into `s` (at rest on entry).
void astar_route(const Graph& g, const RouteBounds& bounds, VertexId src, VertexId dst, SearchScratch& s) {
  s.ensure(boost::num_vertices(g));
  auto index = boost::get(boost::vertex_index, g);
  const LowerBound h(g, bounds, dst);
  s.dist[src] = Cost{};
  s.estimate[src] = h(src);
  run_search(s, [&] {
    boost::astar_search_no_init(g, src, h, RouteVisitor(s, dst), boost::dummy_property_map(),
                                boost::make_iterator_property_map(s.estimate.begin(), index),
                                boost::make_iterator_property_map(s.dist.begin(), index), weight_map(g),
                                boost::make_iterator_property_map(s.color.begin(), index), index, CostLess{},
                                CostPlus{}, kCostInf, Cost{});
  });
}

// Dijkstra from `src` into `s` (at rest on entry); stops once `stop_at` is settled
// (null_vertex() settles everything).
void dijkstra_route(const Graph& g, VertexId src, VertexId stop_at, SearchScratch& s) {
  s.ensure(boost::num_vertices(g));
  auto index = boost::get(boost::vertex_index, g);
  s.dist[src] = Cost{};
  run_search(s, [&] {
    boost::dijkstra_shortest_paths_no_init(g, src, boost::dummy_property_map(),
                                           boost::make_iterator_property_map(s.dist.begin(), index), weight_map(g),
                                           index, CostLess{}, CostPlus{}, Cost{}, RouteVisitor(s, stop_at),
                                           boost::make_iterator_property_map(s.color.begin(), index));
  });
}

// Walks the recorded in-edges back from `dst` to `src`; nullopt when `dst` was not reached.
std::optional<Path> build_path(const Graph& g, const SearchScratch& r, VertexId src, VertexId dst) {
  Path path;
  path.bottleneck_gbps = std::numeric_limits<double>::infinity();
  if (src == dst) return path;
  if (r.dist[dst].ps == kInfPs) return std::nullopt;
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
  if (!c.bounds) c.bounds = compute_route_bounds(graph_);
  const VertexId s = rank_device_[static_cast<std::size_t>(src_rank)];
  const VertexId d = rank_device_[static_cast<std::size_t>(dst_rank)];
  astar_route(graph_, *c.bounds, s, d, c.scratch);
  std::optional<Path> path = build_path(graph_, c.scratch, s, d);
  c.scratch.reset();
  if (!path) throw Error(no_path(src_rank, dst_rank));
  return c.routes.emplace(key, std::move(*path)).first->second;
}

std::vector<Path> Topology::routes_from(int src_rank) const {
  check_rank(src_rank, "routes_from: source");
  const VertexId s = rank_device_[static_cast<std::size_t>(src_rank)];
  SearchScratch r;
  dijkstra_route(graph_, s, Graph::null_vertex(), r);
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
  SearchScratch scratch;
  dijkstra_route(graph_, from, to, scratch);
  std::optional<Path> path = build_path(graph_, scratch, from, to);
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
  try {
    boost::dijkstra_shortest_paths(
        graph_, s,
        boost::weight_map(boost::get(&Link::bandwidth_gbps, graph_))
            .distance_map(boost::make_iterator_property_map(width.begin(), boost::get(boost::vertex_index, graph_)))
            .distance_compare(std::greater<double>())                              // wider is better
            .distance_combine([](double a, double b) { return std::min(a, b); })  // bottleneck
            .distance_inf(-1.0)                                                     // not reached
            .distance_zero(kInf)                                                    // at the source
            .visitor(StopVisitor(d)));
  } catch (const Found&) {
  }
  if (width[d] < 0) throw Error(no_path(src_rank, dst_rank));
  return width[d];
}

}  // namespace colltune::topo
