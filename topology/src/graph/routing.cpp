// Route queries on the device graph, all on Boost.Graph:
//  - route(): minimum total latency, ties toward fewer hops, then toward the lower link index
//    sum (Cost in route_cache.hpp), and among equally cheap paths the one Boost's Dijkstra
//    records. A bidirectional Dijkstra search (one half from the source along out-edges, one
//    from the destination along in-edges; the graph is bidirectionalS) stops as soon as no
//    unexplored path can beat the best meeting of the two; then the forward half finishes as
//    Dijkstra over edges the backward half already scanned (see "route()'s search" below). A
//    query costs about what the two halves of its route need, not the degree of the switches
//    it passes: on flat:ranks=4096 (rank -> crossbar -> rank) the 4096-way crossbar is never
//    scanned. Search arrays are reused between queries; only what a query reached is reset.
//  - routes_from(), device_route(): the same cost with dijkstra_shortest_paths_no_init, on
//    arrays sized for the whole graph (one search per call).
//  - widest_bandwidth(): the max-min (bottleneck) path: Dijkstra with "larger is better" as
//    the comparison and min() as the combination.
#include <algorithm>
#include <boost/graph/detail/d_ary_heap.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <boost/property_map/property_map.hpp>
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>
#include <utility>

#include "colltune/common/error.hpp"
#include "colltune/topology/graph.hpp"
#include "graph/route_cache.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {

std::int64_t latency_ps(const Link& link) {
  if (!(link.latency_us >= 0) || !(link.latency_us < 1e9))
    throw Error("link " + std::to_string(link.index) + ": latency must be finite and >= 0, got " +
                detail::fmt_num(link.latency_us) + " us");
  return std::llround(link.latency_us * 1e6);
}
namespace {

struct Found {};  // thrown by a visitor to end a search once the destination is settled

// Stops the search when `stop_at` is popped from the queue: its distance is final then.
class StopVisitor : public boost::default_dijkstra_visitor {
 public:
  explicit StopVisitor(VertexId stop_at) : stop_at_(stop_at) {}
  template <typename G>
  void examine_vertex(VertexId v, const G&) const {
    if (v == stop_at_) throw Found{};
  }

 private:
  VertexId stop_at_;
};

// The arrays of one plain Dijkstra search (routes_from(), device_route()); in_edge[v] is the
// edge that last improved v (a multigraph needs the edge, not just the predecessor vertex).
struct SearchArrays {
  explicit SearchArrays(std::size_t vertices)
      : dist(vertices, kCostInf), color(vertices, boost::white_color), in_edge(vertices) {}
  std::vector<Cost> dist;
  std::vector<boost::default_color_type> color;
  std::vector<EdgeId> in_edge;
};

// Also records, for each vertex, the edge that last improved it.
class RouteVisitor : public StopVisitor {
 public:
  RouteVisitor(SearchArrays& arrays, VertexId stop_at) : StopVisitor(stop_at), s_(&arrays) {}
  template <typename G>
  void edge_relaxed(const EdgeId& e, const G& g) const { s_->in_edge[boost::target(e, g)] = e; }

 private:
  SearchArrays* s_;
};

// A link's Cost: its latency, one hop, its index (the tie-breaker).
Cost link_cost(const Graph& g, const EdgeId& e) {
  return Cost{latency_ps(g[e]), 1, static_cast<std::int64_t>(g[e].index)};
}

auto weight_map(const Graph& g) {
  return boost::make_function_property_map<EdgeId, Cost>([&g](const EdgeId& e) { return link_cost(g, e); });
}
template <typename Filter>
auto weight_map(const boost::filtered_graph<Graph, Filter>& g) {
  return weight_map(g.m_g);
}

// Dijkstra from `src` over `g` (the graph, or a filtered view of it); stops once `stop_at` is
// settled (null_vertex() settles everything).
template <typename G>
SearchArrays dijkstra_route(const G& g, VertexId src, VertexId stop_at) {
  SearchArrays s(boost::num_vertices(g));
  auto index = boost::get(boost::vertex_index, g);
  s.dist[src] = Cost{};
  try {
    boost::dijkstra_shortest_paths_no_init(g, src, boost::dummy_property_map(),
                                           boost::make_iterator_property_map(s.dist.begin(), index), weight_map(g),
                                           index, CostLess{}, CostPlus{}, Cost{}, RouteVisitor(s, stop_at),
                                           boost::make_iterator_property_map(s.color.begin(), index));
  } catch (const Found&) {
  }
  return s;
}

// The network legs from `nic` to every NIC: Dijkstra over the links that leave `nic` or a device
// outside every host, so a device of a host is an end, never a way through. To each NIC this is
// route()'s network leg (Region::network): a search confined to the network and the two NICs
// finds the same costs and, among equally cheap paths, the same one, since the devices it leaves
// out could only ever be ends here.
struct LeavesNetwork {
  const Graph* g = nullptr;
  VertexId from = 0;
  bool operator()(const EdgeId& e) const {
    const VertexId u = boost::source(e, *g);
    return u == from || (*g)[u].host < 0;
  }
};
SearchArrays network_search(const Graph& g, VertexId nic) {
  return dijkstra_route(boost::filtered_graph<Graph, LeavesNetwork>(g, LeavesNetwork{&g, nic}), nic,
                        Graph::null_vertex());
}

// ---- route()'s search ----
//
// What route() must return is what a plain forward Dijkstra from the source returns (Boost's,
// as in device_route() and routes_from()): the minimum Cost and, where several paths reach it,
// the one Dijkstra's order records. That choice is canonical. Dijkstra settles vertices by
// increasing cost and keeps, for each vertex v, the first edge that brings v to its final cost,
// i.e. the edge from v's "tight" predecessor u (cost(u) + w(u -> v) = cost(v)) of smallest
// cost(u); two tight predecessors never cost the same, since their edges differ in link index
// and so in Cost. The route is the destination, its cheapest tight predecessor, that vertex's
// cheapest tight predecessor, ..., back to the source. Where the cheapest path is unique (the
// tests check that every pair they try on the presets has one) every exact search, A* with
// admissible bounds included, returns it; where it is not (e.g. on a torus) this rule decides.
//
// Phase 1 finds the minimum Cost with a bidirectional Dijkstra: the forward half settles
// vertices by cost from the source (out-edges), the backward half by cost to the destination
// (in-edges; the graph is bidirectionalS), each step advancing the half whose queue head is
// cheaper. Whenever a half scans an edge x -> y with x labelled from the source and y labelled
// toward the destination, "source ~> x -> y ~> destination" is a real path; the cheapest seen is
// `best`. Phase 1 stops when head(fwd) + head(bwd) >= best (an empty queue's head is infinite).
// Then best is the minimum. Cost is a lexicographic triple of integers, compared and added
// componentwise: a totally ordered group (a <= b implies a + c <= b + c, no rounding) in which
// every link costs more than nothing (one hop), so Dijkstra's invariants hold for it as for
// plain numbers and each half has settled, with its final cost, every vertex cheaper than its
// head. Were some path cheaper than best at the stop, take P a cheapest one: along P the cost
// from the source grows, the cost to the destination shrinks, both true costs, and each vertex
// v of P has cost(src ~> v) + cost(v ~> dst) = cost(P) < best <= head(fwd) + head(bwd), so v is
// settled forward or backward. Let x be the last vertex of P settled forward (the source if
// none is, labelled 0 from the start; the destination's predecessor if x would be the
// destination) and y the next vertex of P, settled backward or the destination (labelled 0).
// Whichever of x and y was scanned last saw the other's final label on the edge x -> y and
// offered cost(P) < best: a contradiction.
//
// Phase 2 finds the route: the forward half simply goes on as a forward Dijkstra until it
// settles the destination, relaxing only the in-edges of the vertices the backward half settled
// (listed once from their in-edge lists, which the backward half has already walked). No other
// edge can matter. A vertex v of a cheapest path that the backward half did not settle has
// cost(v ~> dst) >= head(bwd), so cost(src ~> v) = best - cost(v ~> dst) <= head(fwd): its tight
// predecessors, strictly cheaper, were settled and their out-edges scanned in phase 1. And a
// vertex settled in phase 2 costs at least head(fwd), so no tight edge of a cheapest path leads
// from it to a vertex outside the backward-settled set. Leaving out edges that lie on no
// cheapest path changes neither the costs of the vertices on cheapest paths, nor the order in
// which they are settled (by those costs), nor which tight edge reaches each of them first: the
// forward tree path to the destination is, link for link, the one a full forward Dijkstra
// records. Phase 2 scans only edges the backward half already scanned.
//
// So a query costs about what the two halves of its route need, never the whole neighbourhood
// of a big switch merely because the route passes through it. On flat:ranks=4096 (rank ->
// crossbar -> rank) the forward half scans the source rank (1 edge), the backward half the
// destination rank (1 edge), both reach the crossbar, head(fwd) + head(bwd) = best, and phase 2
// relaxes crossbar -> destination: no scan of the crossbar's 4096 edges, no 4096 heap entries.

// Boost's indirect d-ary heap (the queue of Boost's Dijkstra), keyed by a half's dist and
// tracking positions in its heap_pos (kNotQueued = its "absent" value).
using HalfDistMap = boost::iterator_property_map<std::vector<Cost>::iterator, boost::identity_property_map>;
using HalfPosMap = boost::iterator_property_map<std::vector<std::size_t>::iterator, boost::identity_property_map>;
using HalfQueue = boost::d_ary_heap_indirect<VertexId, 4, HalfPosMap, HalfDistMap, CostLess>;

HalfQueue make_queue(BidirectionalScratch::Half& h) {
  return HalfQueue(HalfDistMap(h.dist.begin()), HalfPosMap(h.heap_pos.begin()), CostLess{});
}

// The two directions over the same bidirectionalS graph.
struct Forward {
  static auto edges(VertexId v, const Graph& g) { return boost::out_edges(v, g); }
  static VertexId far_end(const EdgeId& e, const Graph& g) { return boost::target(e, g); }
};
struct Backward {
  static auto edges(VertexId v, const Graph& g) { return boost::in_edges(v, g); }
  static VertexId far_end(const EdgeId& e, const Graph& g) { return boost::source(e, g); }
};

// Relaxes v through e from a vertex at cost `via` in `me` (Boost's rule: strictly better only,
// so the first edge to reach a cost keeps it).
void improve(BidirectionalScratch::Half& me, HalfQueue& queue, VertexId v, const EdgeId& e, const Cost& via) {
  if (!CostLess{}(via, me.dist[v])) return;
  me.dist[v] = via;
  me.tree_edge[v] = e;
  queue.push_or_update(v);
}

// Phase 1 step: settles the head of `me`'s queue and scans its edges in direction Dir, relaxing
// each neighbour in `me` and offering the joined path where the neighbour has a label of the
// `other` half. Returns the settled vertex.
template <typename Dir>
VertexId settle_and_scan(const Graph& g, const Region& region, BidirectionalScratch& s, BidirectionalScratch::Half& me,
                         const BidirectionalScratch::Half& other, HalfQueue& queue, Cost& best) {
  const VertexId u = queue.top();
  queue.pop();
  const Cost at_u = me.dist[u];  // final: u is settled in this half
  for (auto [it, end] = Dir::edges(u, g); it != end; ++it) {
    const EdgeId e = *it;
    const VertexId v = Dir::far_end(e, g);
    if (!region.allows(g, v)) continue;
    const Cost via_u = CostPlus{}(at_u, link_cost(g, e));
    s.touch(v);
    improve(me, queue, v, e, via_u);
    if (other.dist[v].ps != kInfPs) best = std::min(best, CostPlus{}(via_u, other.dist[v]), CostLess{});
  }
  return u;
}

// The links of the route from `src` to `dst` (src != dst, both in `region`) through `region`,
// from the destination back to the source, or nullopt when there is none. `s` is at rest on
// entry and is left at rest. (The search over a region is the search over the subgraph the
// region induces: what is said above holds for it as for the whole graph.)
std::optional<std::vector<EdgeId>> search_route(const Graph& g, VertexId src, VertexId dst, const Region& region,
                                                BidirectionalScratch& s) {
  BidirectionalScratch::Half& fwd = s.forward;
  BidirectionalScratch::Half& bwd = s.backward;
  HalfQueue fwd_queue = make_queue(fwd), bwd_queue = make_queue(bwd);
  auto settled = [](const BidirectionalScratch::Half& h, VertexId v) {
    return h.dist[v].ps != kInfPs && h.heap_pos[v] == BidirectionalScratch::kNotQueued;
  };
  // Phase 1. Both end points are settled first (phase 2 needs the destination settled backward).
  Cost best = kCostInf;
  s.touch(src);
  fwd.dist[src] = Cost{};
  fwd_queue.push(src);
  s.touch(dst);
  bwd.dist[dst] = Cost{};
  bwd_queue.push(dst);
  settle_and_scan<Forward>(g, region, s, fwd, bwd, fwd_queue, best);
  s.backward_settled.push_back(settle_and_scan<Backward>(g, region, s, bwd, fwd, bwd_queue, best));
  while (!fwd_queue.empty() && !bwd_queue.empty()) {
    const Cost& fwd_head = fwd.dist[fwd_queue.top()];
    const Cost& bwd_head = bwd.dist[bwd_queue.top()];
    if (!CostLess{}(CostPlus{}(fwd_head, bwd_head), best)) break;  // nothing left can beat best
    if (CostLess{}(bwd_head, fwd_head))
      s.backward_settled.push_back(settle_and_scan<Backward>(g, region, s, bwd, fwd, bwd_queue, best));
    else
      settle_and_scan<Forward>(g, region, s, fwd, bwd, fwd_queue, best);
  }
  if (best.ps == kInfPs) return std::nullopt;
  // Phase 2: the forward Dijkstra goes on over the in-edges of the backward-settled vertices.
  if (!settled(fwd, dst)) {
    for (VertexId y : s.backward_settled)
      for (auto [it, end] = boost::in_edges(y, g); it != end; ++it) {
        const VertexId x = boost::source(*it, g);  // touched: the backward half labelled it
        if (!region.allows(g, x)) continue;        // (unless the region kept the half out)
        s.cross.push_back({*it, s.cross_first[x]});
        s.cross_first[x] = s.cross.size() - 1;
      }
    while (!fwd_queue.empty() && !settled(fwd, dst)) {
      const VertexId u = fwd_queue.top();
      fwd_queue.pop();
      for (std::size_t i = s.cross_first[u]; i != BidirectionalScratch::kNone; i = s.cross[i].next) {
        const EdgeId& e = s.cross[i].edge;
        improve(fwd, fwd_queue, boost::target(e, g), e, CostPlus{}(fwd.dist[u], link_cost(g, e)));
      }
    }
    if (!settled(fwd, dst)) throw std::logic_error("route(): phase 2 did not settle the destination");
  }
  std::vector<EdgeId> route;
  for (VertexId v = dst; v != src; v = boost::source(fwd.tree_edge[v], g)) route.push_back(fwd.tree_edge[v]);
  return route;
}

}  // namespace

// route()'s search on `s` (reset afterwards, also when latency_ps() rejects a link).
std::optional<std::vector<EdgeId>> cheapest_route(const Graph& g, VertexId src, VertexId dst, const Region& region,
                                                  BidirectionalScratch& s) {
  s.ensure(boost::num_vertices(g));
  std::optional<std::vector<EdgeId>> route;
  try {
    route = search_route(g, src, dst, region, s);
  } catch (...) {
    s.reset();
    throw;
  }
  s.reset();
  return route;
}

// The Path of a route given from its last link back to its first: links in order, latency
// summed from the last link back (one order for every search, so that they agree bit for bit).
Path path_of(const Topology& t, const std::vector<EdgeId>& backwards) {
  const Graph& g = graph_of(t);
  Path path;
  path.bottleneck_gbps = std::numeric_limits<double>::infinity();
  for (const EdgeId& e : backwards) {
    const Link& l = g[e];
    path.links.push_back(l.index);
    path.bottleneck_gbps = std::min(path.bottleneck_gbps, t.bandwidth_of(l));
    path.latency_us += t.latency_of(l);
  }
  std::reverse(path.links.begin(), path.links.end());
  return path;
}

Path joined_path(const Topology& t, std::initializer_list<const Path*> legs) {
  std::vector<std::size_t> links;
  for (const Path* leg : legs) links.insert(links.end(), leg->links.begin(), leg->links.end());
  return path_over(t, std::move(links));
}

Path path_over(const Topology& t, std::vector<std::size_t> links) {
  const std::vector<Link>& by_index = t.graph_store().by_index;  // the links come from the graph
  Path path;
  path.bottleneck_gbps = std::numeric_limits<double>::infinity();
  path.links = std::move(links);
  for (auto it = path.links.rbegin(); it != path.links.rend(); ++it) {  // path_of's order: from the last link
    const Link& l = by_index[*it];
    path.bottleneck_gbps = std::min(path.bottleneck_gbps, t.bandwidth_of(l));
    path.latency_us += t.latency_of(l);
  }
  return path;
}

namespace {

// Walks the recorded in-edges back from `dst` to `src`; nullopt when `dst` was not reached.
std::optional<Path> build_path(const Topology& t, const SearchArrays& r, VertexId src, VertexId dst) {
  if (src != dst && r.dist[dst].ps == kInfPs) return std::nullopt;
  std::vector<EdgeId> backwards;
  for (VertexId v = dst; v != src; v = boost::source(r.in_edge[v], graph_of(t))) backwards.push_back(r.in_edge[v]);
  return path_of(t, backwards);
}

std::string no_path(int src, int dst) {
  return "no path from rank " + std::to_string(src) + " to rank " + std::to_string(dst) +
         " (the topology is disconnected)";
}

}  // namespace

const Path& Topology::route(int src_rank, int dst_rank, int channel) const {
  check_rank(src_rank, "route: source");
  check_rank(dst_rank, "route: destination");
  if (channel < 0) throw Error("route: channel " + std::to_string(channel) + " must be >= 0");
  RouteCache& c = cache();
  std::lock_guard lock(c.mutex);
  const HostIndex& index = c.index ? *c.index : host_index(*this, c.index);
  const int src_host = index.rank_host[static_cast<std::size_t>(src_rank)];
  const int dst_host = index.rank_host[static_cast<std::size_t>(dst_rank)];
  if (src_host >= 0 && dst_host >= 0 && src_host != dst_host)
    if (const Path* via_nics = nic_route(src_rank, dst_rank, channel)) return *via_nics;
  return direct_route(src_rank, dst_rank);
}

// The minimum-latency path between two devices over the whole graph, for this copy: the path
// the copies share (found here or by another copy), its links read at this copy's figures
// (joined_path); nullopt where there is none. cache().mutex held.
std::optional<Path> Topology::shared_direct_route(VertexId s, VertexId d) const {
  LegCache& shared = *legs_;
  const std::optional<Path>& found = shared_search(shared.mutex, shared.direct, device_pair_key(s, d), [&] {
    std::optional<Path> path;
    if (std::optional<std::vector<EdgeId>> edges = cheapest_route(store_->graph, s, d, Region{}, cache().scratch))
      path = path_of(*this, *edges);
    return path;
  });
  return found ? std::optional<Path>(joined_path(*this, {&*found})) : std::nullopt;
}

// The minimum-latency route over the whole graph (cache().mutex held).
const Path& Topology::direct_route(int src_rank, int dst_rank) const {
  RouteCache& c = cache();
  if (const Path* cached = c.routes.find(src_rank, dst_rank, RouteTable::kDirect)) return *cached;
  const VertexId s = rank_device_[static_cast<std::size_t>(src_rank)];
  const VertexId d = rank_device_[static_cast<std::size_t>(dst_rank)];
  Path path;
  if (s == d) {
    path.bottleneck_gbps = std::numeric_limits<double>::infinity();
  } else {
    std::optional<Path> found = shared_direct_route(s, d);
    if (!found) throw Error(no_path(src_rank, dst_rank));
    path = std::move(*found);
  }
  return c.routes.insert(src_rank, dst_rank, RouteTable::kDirect, std::move(path), num_ranks());
}

std::vector<Path> Topology::routes_from(int src_rank, int channel) const {
  check_rank(src_rank, "routes_from: source");
  if (channel < 0) throw Error("routes_from: channel " + std::to_string(channel) + " must be >= 0");
  for (int dst = 0; dst < num_ranks(); ++dst) check_rank(dst, "routes_from: destination");
  const VertexId s = rank_device_[static_cast<std::size_t>(src_rank)];
  const SearchArrays direct = dijkstra_route(store_->graph, s, Graph::null_vertex());
  RouteCache& c = cache();
  std::lock_guard lock(c.mutex);
  const HostIndex& index = host_index(*this, c.index);
  // The source's NIC leg and the network search from its channel NIC, if it has one.
  const NicPlan& plan = nic_plan(src_rank);
  const int src_host = index.rank_host[static_cast<std::size_t>(src_rank)];
  const VertexId nic = plan.nics.empty() ? Graph::null_vertex() : plan.nics[plan.index_for(channel)];
  const std::optional<Path>* out_leg = plan.nics.empty() ? nullptr : &leg(s, nic);
  const std::optional<SearchArrays> network =
      out_leg != nullptr && out_leg->has_value() ? std::optional(network_search(store_->graph, nic)) : std::nullopt;
  std::vector<Path> out;
  out.reserve(static_cast<std::size_t>(num_ranks()));
  for (int dst = 0; dst < num_ranks(); ++dst) {
    const VertexId d = rank_device_[static_cast<std::size_t>(dst)];
    const int dst_host = index.rank_host[static_cast<std::size_t>(dst)];
    const NicPlan* to = src_host < 0 || dst_host < 0 || src_host == dst_host || !network ? nullptr : &nic_plan(dst);
    if (to != nullptr && !to->nics.empty()) {
      const VertexId far_nic = to->nics[to->index_for(channel)];
      const std::optional<Path> middle = build_path(*this, *network, nic, far_nic);
      const std::optional<Path>& in_leg = leg(far_nic, d);
      if (middle && in_leg) {
        out.push_back(joined_path(*this, {&**out_leg, &*middle, &*in_leg}));
        continue;
      }
    }
    std::optional<Path> path = build_path(*this, direct, s, d);
    if (!path) throw Error(no_path(src_rank, dst));
    out.push_back(std::move(*path));
  }
  return out;
}

Path Topology::device_route(VertexId from, VertexId to) const {
  if (from >= num_devices() || to >= num_devices())
    throw Error("device_route: device index " + std::to_string(std::max(from, to)) + " does not exist");
  std::optional<Path> path = build_path(*this, dijkstra_route(store_->graph, from, to), from, to);
  if (!path) throw Error("no path from device '" + store_->graph[from].id + "' to device '" + store_->graph[to].id + "'");
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
        store_->graph, s,
        boost::weight_map(boost::make_function_property_map<EdgeId>(
                              [this](const EdgeId& e) { return bandwidth_of(store_->graph[e]); }))
            .distance_map(
                boost::make_iterator_property_map(width.begin(), boost::get(boost::vertex_index, store_->graph)))
            .distance_compare(std::greater<double>())                             // wider is better
            .distance_combine([](double a, double b) { return std::min(a, b); })  // bottleneck
            .distance_inf(-1.0)                                                   // not reached
            .distance_zero(kInf)                                                  // at the source
            .visitor(StopVisitor(d)));
  } catch (const Found&) {
  }
  if (width[d] < 0) throw Error(no_path(src_rank, dst_rank));
  return width[d];
}

}  // namespace colltune::topo
