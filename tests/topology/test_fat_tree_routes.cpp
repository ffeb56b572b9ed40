// The simulator's load: a ring over a 4096-GPU fat-tree (512 hosts x 8 GPUs) or a 4096-rank flat
// machine asks route() for every ring-neighbour pair. Checks every route's shape and figures
// (speed: bench/micro/topology_routes.cpp), and that route()'s bidirectional search returns, link
// for link, the route a plain forward Dijkstra records, against a textbook Dijkstra written here
// independently of routing.cpp, against routes_from() and against device_route(); between hosts
// with NICs, leg by leg through the channel's NICs (route() in topology.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "colltune/topology/graph.hpp"
#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

// A route must be a chain of links from the source rank's device to the destination's.
void expect_chain(const Topology& t, const Path& p, VertexId from, VertexId to) {
  VertexId at = from;
  for (std::size_t l : p.links) {
    ASSERT_EQ(t.link_source(l), at);
    at = t.link_target(l);
  }
  EXPECT_EQ(at, to);
}

TEST(FatTreeRoutes, RingNeighboursOf4096Gpus) {
  // Defaults: 8 NICs of 400 Gb/s per host, 32 NIC ports per leaf -> 4 hosts per leaf, 128 leaves.
  const Topology t = load_topology("fat-tree:nodes=512,gpus=8");
  ASSERT_EQ(t.num_ranks(), 4096);
  int same_host = 0, same_leaf = 0, cross_leaf = 0;
  for (int r = 0; r < 4096; ++r) {
    const int next = (r + 1) % 4096;
    const Path& p = t.route(r, next);
    expect_chain(t, p, t.device_of_rank(r), t.device_of_rank(next));
    const int host = r / 8, next_host = next / 8;
    if (host == next_host) {
      ++same_host;  // GPU -> NVSwitch -> GPU
      EXPECT_EQ(p.links.size(), 2u);
      EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 450);
      EXPECT_DOUBLE_EQ(p.latency_us, 0.7);
    } else if (host / 4 == next_host / 4) {
      ++same_leaf;  // GPU -> PCIe -> NIC -> leaf -> NIC -> PCIe -> GPU
      EXPECT_EQ(p.links.size(), 6u);
      EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 50);
      EXPECT_DOUBLE_EQ(p.latency_us, 4.0);
    } else {
      ++cross_leaf;  // ... leaf -> spine -> leaf ...
      EXPECT_EQ(p.links.size(), 8u);
      EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 50);
      EXPECT_DOUBLE_EQ(p.latency_us, 6.0);
    }
  }
  EXPECT_EQ(same_host, 512 * 7);
  EXPECT_EQ(cross_leaf, 128);  // 127 leaf boundaries + the wrap from the last host to the first
  EXPECT_EQ(same_leaf, 4096 - 512 * 7 - 128);
  // The cached route and a full single-source search agree.
  const std::vector<Path> from = t.routes_from(4095);
  EXPECT_EQ(from[0].links, t.route(4095, 0).links);
  EXPECT_DOUBLE_EQ(t.widest_bandwidth(7, 8), 50);
}

TEST(FatTreeRoutes, RingNeighboursOfAFlat4096RankMachine) {
  // One crossbar of degree 4096: every route is [rank -> crossbar, crossbar -> rank].
  const Topology t = load_topology("flat:ranks=4096");
  for (int r = 0; r < 4096; ++r) {
    const int next = (r + 1) % 4096;
    const Path& p = t.route(r, next);
    ASSERT_EQ(p.links.size(), 2u) << r;
    expect_chain(t, p, t.device_of_rank(r), t.device_of_rank(next));
    EXPECT_DOUBLE_EQ(p.latency_us, 5.0);  // alpha
    EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 12.5);
  }
}

// ---- route() against an independent Dijkstra ----

// route()'s order: latency in integer ps, then hops, then the sum of link indices.
using Cost3 = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
constexpr std::int64_t kFar = std::numeric_limits<std::int64_t>::max();

Cost3 cost_of(const Topology& t, const EdgeId& e) {
  const Link& l = graph_of(t)[e];
  return {std::llround(l.latency_us * 1e6), 1, static_cast<std::int64_t>(l.index)};
}
Cost3 plus(const Cost3& a, const Cost3& b) {
  return {std::get<0>(a) + std::get<0>(b), std::get<1>(a) + std::get<1>(b), std::get<2>(a) + std::get<2>(b)};
}

// Which devices a search may leave (relax the links out of): all of them for a route over the
// whole graph; the devices of one host for a NIC route's leg inside a host; the first NIC and
// the devices outside every host for its leg across the network.
using Leaves = std::function<bool(VertexId)>;
bool everywhere(VertexId) { return true; }

// Textbook Dijkstra from one device (std::priority_queue, lazy deletion): the cost of every
// device it reaches and the number of cheapest paths to it (capped at 2). Sparse: a search kept
// inside one host costs what the host has, not what the machine has.
struct Reference {
  std::unordered_map<VertexId, Cost3> costs;
  std::unordered_map<VertexId, int> cheapest;
  Leaves leaves = everywhere;
  Cost3 cost(VertexId v) const {
    auto it = costs.find(v);
    return it == costs.end() ? Cost3{kFar, kFar, kFar} : it->second;
  }
  int cheapest_paths(VertexId v) const {
    auto it = cheapest.find(v);
    return it == cheapest.end() ? 0 : it->second;
  }
};
Reference reference_from(const Topology& t, VertexId src, const Leaves& leaves = everywhere) {
  const Graph& g = graph_of(t);
  Reference r{{}, {}, leaves};
  using Item = std::pair<Cost3, VertexId>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
  std::vector<VertexId> order;  // by increasing cost
  std::unordered_set<VertexId> done;
  r.costs[src] = Cost3{0, 0, 0};
  queue.emplace(Cost3{0, 0, 0}, src);
  while (!queue.empty()) {
    const auto [c, u] = queue.top();
    queue.pop();
    if (!done.insert(u).second) continue;
    order.push_back(u);
    if (!leaves(u)) continue;
    for (auto [it, end] = boost::out_edges(u, g); it != end; ++it) {
      const VertexId v = boost::target(*it, g);
      const Cost3 via = plus(c, cost_of(t, *it));
      if (via < r.cost(v)) {
        r.costs[v] = via;
        queue.emplace(via, v);
      }
    }
  }
  r.cheapest[src] = 1;
  for (VertexId v : order)  // predecessors on cheapest paths cost less, so they come first
    for (auto [it, end] = boost::in_edges(v, g); it != end; ++it) {
      const VertexId u = boost::source(*it, g);
      if (v != src && leaves(u) && r.cost(u) != Cost3{kFar, kFar, kFar} && plus(r.cost(u), cost_of(t, *it)) == r.cost(v))
        r.cheapest[v] = std::min(2, r.cheapest_paths(v) + r.cheapest_paths(u));
    }
  return r;
}

// The route a forward Dijkstra records: from the destination, repeatedly the edge from the
// cheapest tight predecessor (the one Dijkstra settles, and relaxes from, first).
std::vector<std::size_t> dijkstra_choice(const Topology& t, const Reference& r, VertexId src, VertexId dst) {
  const Graph& g = graph_of(t);
  std::vector<std::size_t> links;
  for (VertexId v = dst; v != src;) {
    std::optional<EdgeId> pick;
    for (auto [it, end] = boost::in_edges(v, g); it != end; ++it) {
      const VertexId u = boost::source(*it, g);
      if (!r.leaves(u) || r.cost(u) == Cost3{kFar, kFar, kFar} || plus(r.cost(u), cost_of(t, *it)) != r.cost(v)) continue;
      if (!pick || r.cost(u) < r.cost(boost::source(*pick, g))) pick = *it;
    }
    if (!pick) {
      ADD_FAILURE() << "no tight predecessor";
      return {};
    }
    links.push_back(g[*pick].index);
    v = boost::source(*pick, g);
  }
  std::reverse(links.begin(), links.end());
  return links;
}

// The references a NIC route from one source needs: its leg to its NIC, the network from that
// NIC, and (made on first use) each destination NIC's legs into its host.
struct NicReferences {
  const Topology& t;
  int channel = 0;
  VertexId nic = kNoDevice;
  std::optional<Reference> out, network;
  std::map<VertexId, Reference> in;

  NicReferences(const Topology& topo, int a, int ch) : t(topo), channel(ch), nic(t.nic_for_channel(a, ch)) {
    if (nic == kNoDevice) return;
    const int host = t.host_of_rank(a);
    out = reference_from(t, t.device_of_rank(a), [&t = t, host](VertexId v) { return t.device(v).host == host; });
    network = reference_from(t, nic, [&t = t, from = nic](VertexId v) { return v == from || t.device(v).host < 0; });
  }
  // The route the reference gives a -> b through the NICs; nullopt where route() takes the
  // route over the whole graph (same host, a host without NICs, a leg without a path).
  std::optional<std::vector<std::size_t>> route(int a, int b, int& ties) {
    const VertexId s = t.device_of_rank(a), d = t.device_of_rank(b), far = t.nic_for_channel(b, channel);
    const int host = t.host_of_rank(b);
    if (!out || far == kNoDevice || host == t.host_of_rank(a) || host < 0) return std::nullopt;
    auto it = in.find(far);
    if (it == in.end())
      it = in.emplace(far, reference_from(t, far, [&t = t, host](VertexId v) { return t.device(v).host == host; })).first;
    std::vector<std::size_t> links;
    for (const auto& [ref, from, to] : {std::tuple{&*out, s, nic}, std::tuple{&*network, nic, far}, std::tuple{&it->second, far, d}}) {
      if (ref->cost(to) == Cost3{kFar, kFar, kFar}) return std::nullopt;
      const std::vector<std::size_t> leg = dijkstra_choice(t, *ref, from, to);
      links.insert(links.end(), leg.begin(), leg.end());
      if (ref->cheapest_paths(to) > 1) ++ties;
    }
    return links;
  }
};

// route(a, b, channel) for every a in `sources` and every b: the reference's choice (the whole
// graph's, or through the channel's NICs, leg by leg), routes_from()'s route with the same
// figures, and on a sample of plain routes device_route(). Counts pairs with several cheapest
// paths (in the whole graph or in a leg) in `ties` (there the route must still be Dijkstra's).
void check_routes(const Topology& t, const std::vector<int>& sources, int& ties, int channel = 0) {
  for (int a : sources) {
    const VertexId s = t.device_of_rank(a);
    const Reference ref = reference_from(t, s);
    NicReferences nic_refs(t, a, channel);
    const std::vector<Path> all = t.routes_from(a, channel);
    int singles = 0;  // device_route() runs a Dijkstra per call: a sample of 8 per source
    for (int b = 0; b < t.num_ranks(); ++b) {
      const VertexId d = t.device_of_rank(b);
      const Path& got = t.route(a, b, channel);
      const Path& dijkstra = all[static_cast<std::size_t>(b)];
      const std::optional<std::vector<std::size_t>> via_nics = nic_refs.route(a, b, ties);
      ASSERT_EQ(got.links, via_nics ? *via_nics : dijkstra_choice(t, ref, s, d)) << t.name << ": " << a << " -> " << b;
      ASSERT_EQ(got.links, dijkstra.links) << t.name << ": " << a << " -> " << b;
      ASSERT_EQ(got.latency_us, dijkstra.latency_us) << t.name << ": " << a << " -> " << b;  // bit-identical
      ASSERT_EQ(got.bottleneck_gbps, dijkstra.bottleneck_gbps) << t.name << ": " << a << " -> " << b;
      if (via_nics) continue;
      if ((a + b) % 13 == 0 && singles++ < 8) {
        const Path single = t.device_route(s, d);
        ASSERT_EQ(got.links, single.links) << t.name << ": " << a << " -> " << b;
        ASSERT_EQ(got.latency_us, single.latency_us) << t.name << ": " << a << " -> " << b;
      }
      if (ref.cheapest_paths(d) > 1) ++ties;
    }
  }
}

std::vector<int> every(int step, int ranks) {
  std::vector<int> out;
  for (int r = 0; r < ranks; r += step) out.push_back(r);
  if (out.back() != ranks - 1) out.push_back(ranks - 1);
  return out;
}

// On these presets every checked pair has one cheapest path: any exact search (A* with
// admissible bounds, Dijkstra, route()'s bidirectional search) must return it.
TEST(RouteExactness, PresetsHaveUniqueCheapestRoutes) {
  const std::vector<std::pair<const char*, int>> cases = {
      {"flat:ranks=300", 1},                                 // every pair
      {"flat:ranks=512,nodes=512", 37},                      // a host per rank
      {"fat-tree", 1},                                       // 4 nodes, one leaf
      {"fat-tree:nodes=64,gpus=8", 29},                      // 16 leaves
      {"fat-tree:nodes=512,gpus=8,nics=8,oversub=2", 2048},  // 4096 GPUs
      {"fat-tree:nodes=33,gpus=8,nics=2,leaf_ports=4", 23},  // shared NICs, a partial leaf
      {"fat-tree:nodes=8,gpus=4,nics=4,leaf_ports=8,oversub=2", 1},
      {"dgx-h100:nodes=4", 1},
      {"dgx-a100:nodes=5,leaf_ports=16", 3},
      {"dgx1-v100:nodes=2", 1},
      {"pcie-box:nodes=4", 1},
      {"pcie-box:nodes=3,gpus=5,per_switch=2,nics=1", 1},
      {"torus:dims=3x3x2,per_host=3", 1},
  };
  for (const auto& [spec, step] : cases) {
    SCOPED_TRACE(spec);
    const Topology t = load_topology(spec);
    int ties = 0;
    check_routes(t, every(step, t.num_ranks()), ties);
    if (HasFatalFailure()) return;
    EXPECT_EQ(ties, 0);
  }
}

// Routes through the NICs of other channels: leg by leg what Dijkstra records in each leg's
// region, on machines where GPUs have several NICs (channels alternate) or share one.
TEST(RouteExactness, NicRoutesOnEveryChannelFollowDijkstraLegByLeg) {
  for (const char* spec : {"fat-tree:nodes=4,gpus=4,nics=8,leaf_ports=8", "dgx-a100:nodes=3", "dgx1-v100:nodes=2",
                           "pcie-box:nodes=2,gpus=8,per_switch=2,nics=2", "fat-tree:nodes=6,gpus=8,nics=2,leaf_ports=4"}) {
    SCOPED_TRACE(spec);
    const Topology t = load_topology(spec);
    int ties = 0;
    for (int channel : {1, 2, 3, 7}) {
      check_routes(t, every(3, t.num_ranks()), ties, channel);
      if (HasFatalFailure()) return;
    }
    EXPECT_EQ(ties, 0);
  }
}

// A torus has equally cheap paths (same latency, hops and index sum): route() must still pick
// the one Dijkstra records, as before.
TEST(RouteExactness, TorusTiesGoWhereDijkstraPutsThem) {
  int ties = 0;
  for (const auto& [spec, step] : std::vector<std::pair<const char*, int>>{
           {"torus:dims=2x2x2", 1}, {"torus:dims=16x16,per_host=4", 7}, {"torus:dims=8x8x8", 61}, {"torus", 1}}) {
    SCOPED_TRACE(spec);
    const Topology t = load_topology(spec);
    check_routes(t, every(step, t.num_ranks()), ties);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(ties, 0);  // the tie rule was exercised
}

// Small random multigraphs with few distinct latencies (0, 0.5 or 1 us), parallel links and
// self-loops: many equally cheap paths, hosts with and without switches between them.
TEST(RouteExactness, RandomGraphsWithManyTies) {
  std::mt19937 rng(20240611);
  int ties = 0;
  for (int round = 0; round < 40; ++round) {
    Topology t;
    t.name = "random#";
    t.name += std::to_string(round);
    const int n = 6 + static_cast<int>(rng() % 30);
    const int hosts = 1 + static_cast<int>(rng() % 4);
    for (int h = 0; h < hosts; ++h) t.add_host(std::to_string(h));
    for (int v = 0; v < n; ++v) {
      const int host = static_cast<int>(rng() % (hosts + 1)) - 1;  // -1: a switch
      t.add_device(Device{std::to_string(v), DeviceKind::gpu, host, 1});
      t.map_rank(v, static_cast<VertexId>(v));
    }
    auto latency = [&] { return 0.5 * static_cast<double>(rng() % 3); };
    for (int v = 0; v < n; ++v)  // a ring keeps every pair connected
      t.add_duplex_link(static_cast<VertexId>(v), static_cast<VertexId>((v + 1) % n), LinkKind::net, 10, latency());
    for (int k = 0, extra = 2 * n; k < extra; ++k)
      t.add_link(static_cast<VertexId>(rng() % n), static_cast<VertexId>(rng() % n), LinkKind::net, 10, latency());
    check_routes(t, every(1, n), ties);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(ties, 0);
}

std::string numbered(const char* prefix, int k) { return std::string(prefix).append(std::to_string(k)); }

// Hosts of a GPU and a NIC on a random network of switches with many equally cheap paths: most
// NICs have one link to a switch and one back (route() then searches once per pair of switches,
// Topology::append_network_leg), some two of each or a link to another host's NIC (searched per
// pair of NICs). Either way every route is the reference's, leg by leg, ties included.
TEST(RouteExactness, NetworkLegsThroughSwitchPairsGoWhereDijkstraPutsThem) {
  std::mt19937 rng(20261205);
  int ties = 0, shared_switch_pairs = 0;
  for (int round = 0; round < 30; ++round) {
    Topology t;
    t.name = numbered("switches#", round);
    const int switches = 2 + static_cast<int>(rng() % 8), hosts = 3 + static_cast<int>(rng() % 8);
    auto latency = [&] { return 0.5 * static_cast<double>(rng() % 3); };
    std::vector<VertexId> sw;
    for (int k = 0; k < switches; ++k)
      sw.push_back(t.add_device(Device{numbered("sw", k), DeviceKind::net_switch, -1, 0}));
    for (int k = 0; k < switches; ++k)  // a ring of switches, then random links (parallel ones too)
      t.add_duplex_link(sw[static_cast<std::size_t>(k)], sw[static_cast<std::size_t>((k + 1) % switches)],
                        LinkKind::net, 10, latency());
    for (int k = 0; k < 2 * switches; ++k)
      t.add_link(sw[rng() % sw.size()], sw[rng() % sw.size()], LinkKind::net, 10, latency());
    for (int k = 0; k < switches; ++k) {  // diamonds of free links, x -> m1 -> y and x -> m2 -> y, index sums equal
      const VertexId x = sw[rng() % sw.size()], m1 = sw[rng() % sw.size()], m2 = sw[rng() % sw.size()],
                     y = sw[rng() % sw.size()];
      t.add_link(x, m1, LinkKind::net, 10, 0);
      t.add_link(x, m2, LinkKind::net, 10, 0);
      t.add_link(m2, y, LinkKind::net, 10, 0);
      t.add_link(m1, y, LinkKind::net, 10, 0);
    }
    std::vector<VertexId> nics;
    std::map<VertexId, int> on_switch;
    for (int h = 0; h < hosts; ++h) {
      t.add_host(numbered("h", h));
      const VertexId gpu = t.add_device(Device{numbered("gpu", h), DeviceKind::gpu, h, 1});
      const VertexId nic = t.add_device(Device{numbered("nic", h), DeviceKind::nic, h, 0});
      t.add_duplex_link(gpu, nic, LinkKind::pcie, 20, 0.5);
      const VertexId s = sw[rng() % sw.size()];
      t.add_duplex_link(nic, s, LinkKind::net, 10, latency());
      ++on_switch[s];
      if (rng() % 5 == 0) t.add_duplex_link(nic, sw[rng() % sw.size()], LinkKind::net, 10, latency());  // two ways
      if (h > 0 && rng() % 6 == 0) t.add_duplex_link(nic, nics.back(), LinkKind::net, 10, latency());   // back to back
      nics.push_back(nic);
      t.map_rank(h, gpu);
    }
    for (const auto& [s, n] : on_switch) shared_switch_pairs += n > 1;
    check_routes(t, every(1, hosts), ties);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(ties, 0);                 // the tie rule was exercised in the network legs
  EXPECT_GT(shared_switch_pairs, 0);  // NIC pairs met on one pair of switches
}

TEST(RouteExactness, EquallyCheapPathsResolveAsDijkstra) {
  // a -> m1 -> b (links 0 + 3) and a -> m2 -> b (links 1 + 2): same latency, hops and index sum.
  Topology t;
  t.add_host("h");
  const VertexId a = t.add_device(Device{"a", DeviceKind::gpu, 0, 1});
  const VertexId m1 = t.add_device(Device{"m1", DeviceKind::nvswitch, 0, 0});
  const VertexId m2 = t.add_device(Device{"m2", DeviceKind::nvswitch, 0, 0});
  const VertexId b = t.add_device(Device{"b", DeviceKind::gpu, 0, 1});
  t.add_link(a, m1, LinkKind::nvlink, 10, 0.5);
  t.add_link(a, m2, LinkKind::nvlink, 20, 0.5);
  t.add_link(m2, b, LinkKind::nvlink, 20, 0.5);
  t.add_link(m1, b, LinkKind::nvlink, 10, 0.5);
  t.map_rank(0, a);
  t.map_rank(1, b);
  // Dijkstra settles m1 (cost 0.5 us, 1 hop, index 0) before m2 (index 1) and reaches b from m1 first.
  EXPECT_EQ(t.route(0, 1).links, (std::vector<std::size_t>{0, 3}));
  EXPECT_EQ(t.route(0, 1).links, t.device_route(a, b).links);
}

}  // namespace
}  // namespace colltune::topo
