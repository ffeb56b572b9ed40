// The graph itself: construction, copies, route / widest-path queries, validate().
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <thread>

#include "colltune/topology/graph.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/subset.hpp"
#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

using test::error_of;
using ::testing::HasSubstr;

VertexId gpu(Topology& t, const std::string& id, int host = 0) { return t.add_device(Device{id, DeviceKind::gpu, host, 100}); }

// a -> b directly (1 hop, 1.0 us, 10 GB/s) or a -> m -> b (2 hops, 0.5 + 0.5 us, 100 GB/s);
// a parallel direct link of 2 us; ranks 0 = a, 1 = b.
Topology diamond() {
  Topology t;
  t.add_host("h");
  const VertexId a = gpu(t, "a"), m = gpu(t, "m"), b = gpu(t, "b");
  t.add_duplex_link(a, b, LinkKind::net, 10, 1.0);
  t.add_duplex_link(a, b, LinkKind::net, 400, 2.0);
  t.add_duplex_link(a, m, LinkKind::nvlink, 100, 0.5);
  t.add_duplex_link(m, b, LinkKind::nvlink, 100, 0.5);
  t.map_rank(0, a);
  t.map_rank(1, b);
  return t;
}

TEST(TopologyGraph, KindsRoundTripAndListValidNames) {
  for (DeviceKind k : {DeviceKind::gpu, DeviceKind::cpu, DeviceKind::nic, DeviceKind::nvswitch, DeviceKind::pcie_switch,
                       DeviceKind::net_switch})
    EXPECT_EQ(parse_device_kind(to_string(k)), k);
  for (LinkKind k : {LinkKind::nvlink, LinkKind::pcie, LinkKind::net, LinkKind::shm, LinkKind::sys})
    EXPECT_EQ(parse_link_kind(to_string(k)), k);
  EXPECT_THAT(error_of([] { parse_device_kind("tpu"); }), HasSubstr("'tpu' (valid: gpu, cpu, nic"));
  EXPECT_THAT(error_of([] { parse_link_kind("ib"); }), HasSubstr("'ib' (valid: nvlink, pcie, net, shm, sys)"));
}

TEST(TopologyGraph, RouteTiesOnLatencyGoToFewerHops) {
  const Topology t = diamond();
  t.validate();
  const Path& p = t.route(0, 1);
  ASSERT_EQ(p.links.size(), 1u);  // 1.0 us either way; the direct link has one hop
  EXPECT_DOUBLE_EQ(p.latency_us, 1.0);
  EXPECT_DOUBLE_EQ(p.bottleneck_gbps, 10);
  EXPECT_EQ(t.link(p.links[0]).latency_us, 1.0);  // not the parallel 2 us link
}

TEST(TopologyGraph, LatencySumsCompareExactly) {
  // 0.1 + 0.2 != 0.3 in doubles; in integer picoseconds they tie and the 1-hop path wins.
  Topology t;
  t.add_host("h");
  const VertexId a = gpu(t, "a"), m = gpu(t, "m"), b = gpu(t, "b");
  t.add_link(a, m, LinkKind::nvlink, 50, 0.1);
  t.add_link(m, b, LinkKind::nvlink, 50, 0.2);
  t.add_link(a, b, LinkKind::pcie, 20, 0.3);
  t.add_link(b, a, LinkKind::pcie, 20, 0.3);
  t.map_rank(0, a);
  t.map_rank(1, b);
  EXPECT_EQ(t.route(0, 1).links.size(), 1u);
  EXPECT_DOUBLE_EQ(t.route(0, 1).bottleneck_gbps, 20);
}

TEST(TopologyGraph, WidestPathDiffersFromFastestPath) {
  const Topology t = diamond();
  EXPECT_DOUBLE_EQ(t.widest_bandwidth(0, 1), 400);  // the slow parallel link is the widest
  EXPECT_DOUBLE_EQ(t.route(0, 1).bottleneck_gbps, 10);
  EXPECT_TRUE(std::isinf(t.widest_bandwidth(0, 0)));
}

TEST(TopologyGraph, RouteToSelfIsEmpty) {
  Topology t = diamond();
  t.map_rank(2, t.device_of_rank(0));  // two ranks on one device
  const Path& p = t.route(0, 2);
  EXPECT_TRUE(p.links.empty());
  EXPECT_TRUE(std::isinf(p.bottleneck_gbps));
  EXPECT_EQ(p.latency_us, 0);
}

TEST(TopologyGraph, RouteIsCachedAndMatchesRoutesFrom) {
  const Topology t = diamond();
  const Path& first = t.route(1, 0);
  EXPECT_EQ(&first, &t.route(1, 0));
  const std::vector<Path> all = t.routes_from(1);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].links, first.links);
  EXPECT_TRUE(all[1].links.empty());
}

// route() runs a bidirectional search, routes_from() plain Dijkstra: with the canonical tie
// break they must return identical routes for every pair.
TEST(TopologyGraph, BidirectionalRoutesEqualDijkstraRoutes) {
  for (const char* spec : {"dgx-h100:nodes=3", "fat-tree:nodes=8,gpus=4,nics=4,leaf_ports=8,oversub=2", "dgx1-v100:nodes=2",
                           "dgx-a100:nodes=5,leaf_ports=16", "pcie-box:nodes=2,gpus=5,per_switch=2,nics=1",
                           "torus:dims=3x3x2,per_host=3", "flat:ranks=5,nodes=5"}) {
    SCOPED_TRACE(spec);
    const Topology t = load_topology(spec);
    for (int a = 0; a < t.num_ranks(); ++a) {
      const std::vector<Path> all = t.routes_from(a);
      for (int b = 0; b < t.num_ranks(); ++b) {
        ASSERT_EQ(t.route(a, b).links, all[static_cast<std::size_t>(b)].links) << a << " -> " << b;
        ASSERT_EQ(t.route(a, b).latency_us, all[static_cast<std::size_t>(b)].latency_us);
      }
    }
  }
}

TEST(TopologyGraph, CopiesAndMovesKeepLinksUsable) {
  Topology original = diamond();
  const std::vector<std::size_t> expected = original.route(0, 1).links;
  Topology copy = original;
  Topology moved = std::move(original);
  Topology assigned;
  assigned = copy;
  for (const Topology* t : {&copy, &moved, &assigned}) {
    ASSERT_EQ(t->num_links(), 8u);
    for (std::size_t i = 0; i < t->num_links(); ++i) EXPECT_EQ(t->link(i).index, i);
    EXPECT_EQ(t->route(0, 1).links, expected);
    EXPECT_EQ(t->device(t->link_source(0)).id, "a");
  }
}

TEST(TopologyGraph, ScaledBandwidthTouchesOneKind) {
  const Topology t = diamond();
  const Topology fast = t.with_scaled_bandwidth(LinkKind::net, 4);
  EXPECT_DOUBLE_EQ(fast.widest_bandwidth(0, 1), 1600);
  EXPECT_DOUBLE_EQ(fast.route(0, 1).bottleneck_gbps, 40);
  EXPECT_DOUBLE_EQ(t.route(0, 1).bottleneck_gbps, 10);  // the original is untouched
  EXPECT_THAT(error_of([&] { (void)t.with_scaled_bandwidth(LinkKind::net, 0); }), HasSubstr("positive"));
}

// One factor per link kind, in one copy; routes cached on the original are not the copy's.
TEST(TopologyGraph, ScaledBandwidthPerKindScalesEveryLinkByItsKind) {
  const Topology t = diamond();
  EXPECT_DOUBLE_EQ(t.route(0, 1).bottleneck_gbps, 10);  // cached on the original
  std::array<double, kLinkKinds> factors;
  factors.fill(1.0);
  factors[static_cast<std::size_t>(LinkKind::net)] = 0.5;
  factors[static_cast<std::size_t>(LinkKind::nvlink)] = 0.25;
  const Topology scaled = t.with_scaled_bandwidth(factors);
  ASSERT_EQ(scaled.num_links(), t.num_links());
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const double f = t.link(i).kind == LinkKind::net ? 0.5 : 0.25;
    EXPECT_EQ(scaled.link(i).bandwidth_gbps, t.link(i).bandwidth_gbps * f) << "link " << i;
    EXPECT_EQ(scaled.link(i).latency_us, t.link(i).latency_us) << "link " << i;
  }
  EXPECT_DOUBLE_EQ(scaled.route(0, 1).bottleneck_gbps, 5);
  EXPECT_DOUBLE_EQ(scaled.widest_bandwidth(0, 1), 200);
  factors[static_cast<std::size_t>(LinkKind::sys)] = std::numeric_limits<double>::infinity();
  EXPECT_THAT(error_of([&] { (void)t.with_scaled_bandwidth(factors); }), HasSubstr("positive and finite"));
}

// A latency copy reads every link's latency times its factor, and routes as a graph with those
// latencies written into it. a -> m -> b (3 + 3 ps) is cheaper than the direct 7 ps link, but
// halved and rounded to picoseconds both cost 4 ps and the direct link's one hop wins: the
// halved copy must not keep the original's path (the costs do not scale exactly), while on the
// diamond, whose costs halve exactly, it shares the original's paths.
TEST(TopologyGraph, ALatencyCopyRoutesAsAGraphWithItsLatenciesWritten) {
  Topology t;
  t.add_host("h");
  const VertexId a = gpu(t, "a"), m = gpu(t, "m"), b = gpu(t, "b");
  t.add_duplex_link(a, m, LinkKind::nvlink, 100, 3e-6);
  t.add_duplex_link(m, b, LinkKind::nvlink, 100, 3e-6);
  t.add_duplex_link(a, b, LinkKind::nvlink, 100, 7e-6);
  t.map_rank(0, a);
  t.map_rank(1, b);
  const auto written = [](const Topology& from, double factor) {
    Topology out = from;
    for (std::size_t i = 0; i < out.num_links(); ++i)
      out.set_link_figures(i, out.link(i).bandwidth_gbps, out.link(i).latency_us * factor);
    return out;
  };
  for (const Topology& machine : {t, diamond(), diamond().with_scaled_bandwidth(LinkKind::net, 3)}) {
    machine.validate();
    const std::vector<std::size_t> before = machine.route(0, 1).links;  // found, and kept for copies
    for (double factor : {0.5, 0.3, 2.0}) {
      const Topology copy = machine.with_scaled_latency(factor);
      const Topology fresh = written(machine, factor);
      copy.validate();
      for (std::size_t i = 0; i < machine.num_links(); ++i) {
        EXPECT_EQ(copy.link(i).latency_us, machine.link(i).latency_us * factor) << "link " << i;
        EXPECT_EQ(copy.link(i).bandwidth_gbps, machine.link(i).bandwidth_gbps) << "link " << i;
      }
      for (const auto& [from, to] : {std::pair{0, 1}, std::pair{1, 0}}) {
        EXPECT_EQ(copy.route(from, to).links, fresh.route(from, to).links) << factor;
        EXPECT_EQ(copy.route(from, to).latency_us, fresh.route(from, to).latency_us) << factor;
        EXPECT_EQ(copy.route(from, to).bottleneck_gbps, fresh.route(from, to).bottleneck_gbps) << factor;
      }
      // Scaled again: as a graph with the first factor's latencies written, then the second's.
      const Topology twice = copy.with_scaled_latency(0.5);
      EXPECT_EQ(twice.route(0, 1).latency_us, written(written(machine, factor), 0.5).route(0, 1).latency_us);
    }
    EXPECT_EQ(machine.route(0, 1).links, before);  // the original is untouched
  }
  const std::vector<std::size_t> via_m = t.route(0, 1).links;
  EXPECT_EQ(via_m.size(), 2U);
  EXPECT_EQ(t.with_scaled_latency(0.5).route(0, 1).links.size(), 1U) << "kept the original's path";
  EXPECT_THAT(error_of([&] { (void)t.with_scaled_latency(0); }), HasSubstr("latency scale factor must be positive"));
}

// A reduction copy reads every device's rate times its factor (0 stays 0) wherever a rate is
// read: in its JSON, in a subset, once it changes its own graph; the original is untouched.
TEST(TopologyGraph, AReductionCopyReadsEveryRateTimesItsFactor) {
  Topology t = diamond();
  t.set_reduce_gbps(t.device_of_rank(1), 0);
  const Topology copy = t.with_scaled_reduction(2);
  Topology written = t;
  for (VertexId v = 0; v < t.num_devices(); ++v) written.set_reduce_gbps(v, t.device(v).reduce_gbps * 2);
  for (VertexId v = 0; v < t.num_devices(); ++v) {
    EXPECT_EQ(copy.reduce_gbps_of(v), t.device(v).reduce_gbps * 2) << "device " << v;
    EXPECT_EQ(t.reduce_gbps_of(v), t.device(v).reduce_gbps) << "device " << v;
  }
  EXPECT_EQ(to_json(copy), to_json(written));
  EXPECT_EQ(to_json(copy.with_scaled_reduction(1.5)), to_json(written.with_scaled_reduction(1.5)));
  EXPECT_EQ(to_json(without_hosts(copy, {})), to_json(without_hosts(written, {})));
  Topology changed = copy;
  changed.set_link_figures(0, 5, 1);  // a graph of its own, the rates written into it
  EXPECT_EQ(changed.device(changed.device_of_rank(0)).reduce_gbps, 200);
  EXPECT_EQ(changed.reduce_gbps_of(changed.device_of_rank(0)), 200);
  EXPECT_EQ(t.device(t.device_of_rank(0)).reduce_gbps, 100);
  EXPECT_THAT(error_of([&] { (void)t.with_scaled_reduction(-1); }), HasSubstr("reduction scale factor"));
}

// GraphStore::by_index holds each link's properties as its edge does (link() and the routes'
// paths read the array, the searches read the edges): after a link is added, its figures
// changed, or the store copied with a copy's factors written into it.
TEST(TopologyGraph, TheLinkArrayHoldsWhatTheEdgesHold) {
  const Topology t = diamond();
  Topology changed = t.with_scaled_bandwidth(LinkKind::net, 3).with_scaled_latency(2);
  changed.set_link_figures(0, 1.5, 9);  // a store of its own, the factors written into it
  Topology grown = t;
  grown.add_link(grown.device_of_rank(0), grown.device_of_rank(1), LinkKind::net, 1, 0.5);
  for (const Topology* machine : std::array<const Topology*, 3>{&t, &changed, &grown}) {
    const GraphStore& store = machine->graph_store();
    ASSERT_EQ(store.by_index.size(), store.links.size());
    for (std::size_t i = 0; i < store.links.size(); ++i) {
      const Link& edge = store.graph[store.links[i]];
      const Link& kept = store.by_index[i];
      EXPECT_EQ(kept.index, i);
      EXPECT_EQ(edge.index, i);
      EXPECT_EQ(kept.kind, edge.kind) << "link " << i;
      EXPECT_EQ(kept.bandwidth_gbps, edge.bandwidth_gbps) << "link " << i;
      EXPECT_EQ(kept.latency_us, edge.latency_us) << "link " << i;
    }
  }
  EXPECT_EQ(changed.graph_store().by_index[0].bandwidth_gbps, 1.5);
  EXPECT_EQ(changed.graph_store().by_index[1].latency_us, t.link(1).latency_us * 2);
  EXPECT_EQ(grown.graph_store().by_index.back().latency_us, 0.5);
}

// Copies share the graph until one of them changes it: a change to any copy, scaled or not,
// leaves every other copy as it was; a change to a scaled copy keeps its scaled figures; a
// scaled copy scaled again reads each bandwidth as (b x f1) x f2, as when each held its graph.
TEST(TopologyGraph, CopiesShareTheGraphUntilOneChangesIt) {
  const Topology t = diamond();
  std::vector<double> before;
  for (std::size_t i = 0; i < t.num_links(); ++i) before.push_back(t.link(i).bandwidth_gbps);
  const Topology fast = t.with_scaled_bandwidth(LinkKind::net, 3);
  const Topology faster = fast.with_scaled_bandwidth(LinkKind::net, 0.7);

  Topology changed = fast;
  changed.set_link_figures(0, 1.5, 9);
  changed.set_reduce_gbps(changed.device_of_rank(0), 77);
  Topology grown = t;
  grown.add_link(grown.device_of_rank(0), grown.device_of_rank(1), LinkKind::net, 1, 0.5);

  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const bool net = t.link(i).kind == LinkKind::net;
    EXPECT_EQ(t.link(i).bandwidth_gbps, before[i]) << "link " << i;
    EXPECT_EQ(fast.link(i).bandwidth_gbps, net ? before[i] * 3 : before[i]) << "link " << i;
    EXPECT_EQ(faster.link(i).bandwidth_gbps, net ? before[i] * 3 * 0.7 : before[i]) << "link " << i;
    if (i > 0) {
      EXPECT_EQ(changed.link(i).bandwidth_gbps, fast.link(i).bandwidth_gbps) << "link " << i;
    }
  }
  EXPECT_EQ(faster.widest_bandwidth(0, 1), 400 * 3 * 0.7);
  EXPECT_EQ(faster.route(0, 1).bottleneck_gbps, 10 * 3 * 0.7);
  EXPECT_EQ(changed.link(0).bandwidth_gbps, 1.5);
  EXPECT_EQ(changed.link(0).latency_us, 9);
  EXPECT_EQ(changed.device(changed.device_of_rank(0)).reduce_gbps, 77);
  EXPECT_NE(t.device(t.device_of_rank(0)).reduce_gbps, 77);
  EXPECT_NE(fast.link(0).latency_us, 9);
  EXPECT_EQ(grown.num_links(), t.num_links() + 1);
  EXPECT_EQ(fast.num_links(), t.num_links());
  EXPECT_EQ(grown.route(0, 1).latency_us, 0.5);
  EXPECT_EQ(t.route(0, 1).latency_us, 1.0);
}

TEST(TopologyGraph, AddingALinkInvalidatesCachedRoutes) {
  Topology t = diamond();
  EXPECT_EQ(t.route(0, 1).latency_us, 1.0);
  t.add_link(t.device_of_rank(0), t.device_of_rank(1), LinkKind::nvlink, 900, 0.25);
  EXPECT_EQ(t.route(0, 1).latency_us, 0.25);
}

TEST(TopologyGraph, RankLayoutGroupsByHost) {
  Topology t;
  t.add_host("x");
  t.add_host("empty");
  t.add_host("y");
  const VertexId sw = t.add_device(Device{"sw", DeviceKind::net_switch, -1, 0});
  const VertexId y0 = gpu(t, "y0", 2), x0 = gpu(t, "x0", 0), y1 = gpu(t, "y1", 2);
  for (VertexId v : {y0, x0, y1}) t.add_duplex_link(v, sw, LinkKind::net, 10, 1);
  t.map_rank(0, y0);
  t.map_rank(1, x0);
  t.map_rank(2, y1);
  t.validate();
  const RankLayout layout = t.rank_layout();
  EXPECT_EQ(layout.nhosts(), 2);  // the host without ranks is left out
  EXPECT_EQ(layout.host_of_rank(), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(t.host_of_rank(0), 2);
}

TEST(TopologyGraph, ConcurrentRoutesAgree) {
  const Topology t = diamond();
  std::vector<std::thread> threads;
  std::vector<std::size_t> hops(8);
  for (std::size_t i = 0; i < hops.size(); ++i)
    threads.emplace_back([&, i] { hops[i] = t.route(static_cast<int>(i % 2), static_cast<int>(1 - i % 2)).links.size(); });
  for (auto& th : threads) th.join();
  for (std::size_t h : hops) EXPECT_EQ(h, 1u);
}

TEST(TopologyGraph, QueriesRejectBadRanks) {
  const Topology t = diamond();
  EXPECT_THAT(error_of([&] { (void)t.route(0, 5); }), HasSubstr("rank 5 out of range (topology has 2 ranks)"));
  EXPECT_THAT(error_of([&] { (void)t.widest_bandwidth(-1, 0); }), HasSubstr("rank -1 out of range"));
  EXPECT_THAT(error_of([&] { (void)t.device_route(0, 99); }), HasSubstr("device index 99 does not exist"));
}

// validate() reads a graph's devices and links once per graph, hosts and bandwidth factors
// (GraphStore::checked): a copy that shares them checks its ranks only. Every change of the graph
// is checked again, in place or in a copy, and so is a scaled copy whose factor puts a link out
// of range. Without the mark forgotten on a change, the spoiled links below would pass.
TEST(TopologyValidate, AGraphCheckedOnceIsCheckedAgainAfterAChange) {
  const auto spoiled_after_check = [](const std::function<void(Topology&)>& spoil, bool copy) {
    Topology t = diamond();
    t.validate();
    if (!copy) {  // the graph its own, changed in place
      spoil(t);
      return error_of([&] { t.validate(); });
    }
    Topology other = t;
    other.validate();  // the shared graph, checked by both
    spoil(other);
    return error_of([&] { other.validate(); });
  };
  for (bool copy : {false, true}) {
    EXPECT_THAT(spoiled_after_check([](Topology& t) { t.add_link(0, 1, LinkKind::net, -3, 1); }, copy),
                HasSubstr("got -3"));
    EXPECT_THAT(spoiled_after_check([](Topology& t) { t.set_link_figures(0, 0, 1); }, copy),
                HasSubstr("links[0] (a -> b).bandwidth_gbps"));
    EXPECT_THAT(spoiled_after_check([](Topology& t) { t.set_reduce_gbps(0, 1e9); }, copy),
                HasSubstr("devices[0].reduce_gbps"));
    EXPECT_THAT(spoiled_after_check([](Topology& t) { gpu(t, "a"); }, copy), HasSubstr("duplicate device id 'a'"));
    EXPECT_THAT(spoiled_after_check([](Topology& t) { t.map_rank(1, 1); }, copy),
                HasSubstr("rank 1 is mapped 2 times"));
  }
  const Topology t = diamond();
  t.validate();
  const Topology huge = t.with_scaled_bandwidth(LinkKind::net, 1e4);  // 400 GB/s -> 4e6
  EXPECT_THAT(error_of([&] { huge.validate(); }), HasSubstr("links[2] (a -> b).bandwidth_gbps"));
  t.validate();  // the graph itself is still sound
  Topology more = t;
  more.map_rank(3, 1);  // the ranks alone changed: read, the shared graph not
  EXPECT_THAT(error_of([&] { more.validate(); }), HasSubstr("rank 2 is not mapped"));
}

TEST(TopologyValidate, NamesEachProblem) {
  auto check = [](const std::function<void(Topology&)>& spoil, const std::string& expected) {
    Topology t = diamond();
    spoil(t);
    EXPECT_THAT(error_of([&] { t.validate(); }), HasSubstr(expected)) << expected;
  };
  check([](Topology& t) { t.add_link(0, 1, LinkKind::net, 0, 1); }, "links[8] (a -> m).bandwidth_gbps: must be in [1e-06, 1e+06] GB/s");
  check([](Topology& t) { t.add_link(0, 1, LinkKind::net, -3, 1); }, "got -3");
  check([](Topology& t) { t.add_link(0, 1, LinkKind::net, std::numeric_limits<double>::infinity(), 1); }, "got inf");
  check([](Topology& t) { t.add_link(0, 1, LinkKind::net, 5, -1); }, "latency_us: must be in [0, 1e+06] us (beyond it times overflow or the figure is a typo), got -1");
  check([](Topology& t) { t.map_rank(3, 0); }, "ranks: rank 2 is not mapped");
  check([](Topology& t) { t.map_rank(1, 1); }, "ranks: rank 1 is mapped 2 times");
  check([](Topology& t) { t.map_rank(2, 42); }, "rank 2 is mapped to a device that does not exist");
  check([](Topology& t) { gpu(t, "a"); }, "duplicate device id 'a'");
  check([](Topology& t) { gpu(t, "orphan", 3); }, "names host 3 of 1");
  check([](Topology& t) { t.add_host("h"); }, "duplicate host name 'h'");
  check([](Topology& t) { t.map_rank(2, gpu(t, "island")); }, "disconnected: rank 2 (device 'island') cannot be reached");
  check([](Topology& t) {
    const VertexId v = gpu(t, "sink");
    t.add_link(0, v, LinkKind::net, 1, 1);  // reachable, but no way back
    t.map_rank(2, v);
  }, "rank 2 (device 'sink') cannot reach rank 0");
  EXPECT_THAT(error_of([] { Topology().validate(); }), HasSubstr("no ranks"));
  EXPECT_THAT(error_of([] { Topology().map_rank(-1, 0); }), HasSubstr("rank must be >= 0"));
}

}  // namespace
}  // namespace colltune::topo
