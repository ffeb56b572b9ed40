// NCCL's NIC per channel (Topology::local_nics, nic_for_channel) on the presets and on a
// hand-written file, and the routes through those NICs: well-formed on every channel, never
// through a third host, cached per NIC pair, safe from several threads.
#include <algorithm>
#include <set>
#include <thread>

#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

using test::data_path;
using test::error_of;
using ::testing::HasSubstr;

VertexId device(const Topology& t, const std::string& id) {
  const std::optional<VertexId> v = t.find_device(id);
  if (!v) ADD_FAILURE() << "no device " << id;
  return v.value_or(kNoDevice);
}

std::string nic_id(const Topology& t, int rank, int channel) { return t.device(t.nic_for_channel(rank, channel)).id; }

std::string host_device(int host, const std::string& what) { return "node" + std::to_string(host) + "/" + what; }

// Every rank's NIC on channels 0..7 is expected(gpu index in host) of its host.
void expect_nics(const Topology& t, int gpus_per_host, const std::function<std::string(int gpu, int channel)>& expected) {
  for (int r = 0; r < t.num_ranks(); ++r)
    for (int c = 0; c < 8; ++c)
      ASSERT_EQ(nic_id(t, r, c), host_device(r / gpus_per_host, expected(r % gpus_per_host, c)))
          << t.name << ": rank " << r << " channel " << c;
}

TEST(NicPerChannel, DgxA100GpusBehindOneSwitchTakeOneNicEach) {
  // 4 PCIe switches, each with GPUs 2k, 2k+1 and NICs 2k, 2k+1: both NICs are local to both
  // GPUs, two GPUs share them, one NIC per GPU; GPU 2k starts at NIC 2k, GPU 2k+1 at 2k+1.
  const Topology t = load_topology("dgx-a100:nodes=2");
  expect_nics(t, 8, [](int gpu, int) { return "nic" + std::to_string(gpu); });
  for (int r = 0; r < 16; ++r) {
    const int pair = (r % 8) / 2 * 2;
    EXPECT_EQ(t.local_nics(r), (std::vector<VertexId>{device(t, host_device(r / 8, "nic" + std::to_string(pair))),
                                                      device(t, host_device(r / 8, "nic" + std::to_string(pair + 1)))}));
  }
}

TEST(NicPerChannel, DgxH100HasANicPerGpu) {
  const Topology t = load_topology("dgx-h100:nodes=2");
  expect_nics(t, 8, [](int gpu, int) { return "nic" + std::to_string(gpu); });
  for (int r = 0; r < 16; ++r) EXPECT_EQ(t.local_nics(r).size(), 1u);
}

TEST(NicPerChannel, Dgx1V100GpuPairsShareANic) {
  const Topology t = load_topology("dgx1-v100:nodes=2");  // 4 NICs for 8 GPUs, one per PCIe switch
  expect_nics(t, 8, [](int gpu, int) { return "nic" + std::to_string(gpu / 2); });
}

TEST(NicPerChannel, ASingleNicTakesEveryGpuAndChannel) {
  const Topology t = load_topology("pcie-box:nodes=2,gpus=8,per_switch=2,nics=1");
  expect_nics(t, 8, [](int, int) { return std::string("nic0"); });
  // GPUs behind other switches reach it through the CPU: still their only (so nearest) NIC.
  EXPECT_EQ(t.local_nics(7), (std::vector<VertexId>{device(t, "node0/nic0")}));
}

TEST(NicPerChannel, PcieBoxGpusTakeTheNicOfTheirCpu) {
  // Switches 0, 1 on cpu0, 2, 3 on cpu1; NIC 0 on switch 0, NIC 1 on switch 2. GPUs 2, 3 reach
  // NIC 0 through cpu0 in fewer hops than NIC 1 (which also crosses the CPU link).
  const Topology t = load_topology("pcie-box:nodes=2,gpus=8,per_switch=2,nics=2");
  expect_nics(t, 8, [](int gpu, int) { return gpu < 4 ? std::string("nic0") : std::string("nic1"); });
}

TEST(NicPerChannel, FourGpusOnFourNicsStartBitReversed) {
  // One switch with 4 GPUs and 4 NICs: every NIC is local to every GPU, 4 GPUs share them, one
  // NIC each, starting at dev with its 2 low bits reversed: 0, 2, 1, 3.
  const Topology t = load_topology("pcie-box:nodes=2,gpus=4,per_switch=4,nics=4");
  expect_nics(t, 4, [](int gpu, int) { return "nic" + std::to_string(std::vector<int>{0, 2, 1, 3}[static_cast<std::size_t>(gpu)]); });
}

TEST(NicPerChannel, TwoGpusOnFourNicsUseTwoEachByChannel) {
  // nets per GPU = 4 / 2 = 2; GPU 0 starts at 0, GPU 1 at reverse(1) = 2; channels alternate.
  const Topology t = load_topology("pcie-box:nodes=2,gpus=2,per_switch=2,nics=4");
  expect_nics(t, 2, [](int gpu, int c) { return "nic" + std::to_string(2 * gpu + c % 2); });
}

TEST(NicPerChannel, AGpuWithTwoEquallyNearNicsAlternatesBetweenThem) {
  // two-nics.json: gpu0 reaches nicA and nicB in one PCIe hop each and no other GPU is as near
  // to them; gpu1 has nicC alone.
  const Topology t = load_topology(data_path("two-nics.json"));
  for (int c = 0; c < 6; ++c) {
    EXPECT_EQ(nic_id(t, 0, c), c % 2 == 0 ? "h0/nicA" : "h0/nicB") << c;
    EXPECT_EQ(nic_id(t, 2, c), c % 2 == 0 ? "h1/nicA" : "h1/nicB") << c;
    EXPECT_EQ(nic_id(t, 1, c), "h0/nicC") << c;
  }
  EXPECT_EQ(test::path_devices(t, t.route(0, 2, 1), t.device_of_rank(0)),
            (std::vector<std::string>{"h0/gpu0", "h0/nicB", "sw", "h1/nicB", "h1/gpu0"}));
  EXPECT_EQ(test::path_devices(t, t.route(0, 3, 0), t.device_of_rank(0)),
            (std::vector<std::string>{"h0/gpu0", "h0/nicA", "sw", "h1/nicC", "h1/gpu1"}));
}

TEST(NicPerChannel, MachinesWithoutNicsRouteAsBefore) {
  for (const char* spec : {"torus:dims=4x4,per_host=4", "flat:ranks=8,nodes=4"}) {
    const Topology t = load_topology(spec);
    for (int a = 0; a < t.num_ranks(); ++a) {
      EXPECT_TRUE(t.local_nics(a).empty());
      EXPECT_EQ(t.nic_for_channel(a, 3), kNoDevice);
      for (int b = 0; b < t.num_ranks(); ++b) {
        EXPECT_EQ(&t.route(a, b, 5), &t.route(a, b)) << spec << ": " << a << " -> " << b;
        EXPECT_EQ(t.route(a, b).links, t.device_route(t.device_of_rank(a), t.device_of_rank(b)).links);
      }
    }
  }
}

// A route from a to b on `channel`: a chain of links from a's device to b's, no device twice,
// figures from its links; between hosts with NICs, through the channel's NIC at both ends and
// none of a third host's devices.
void expect_well_formed(const Topology& t, int a, int b, int channel) {
  const Path& p = t.route(a, b, channel);
  const bool via_nics = t.host_of_rank(a) != t.host_of_rank(b) && t.nic_for_channel(a, channel) != kNoDevice &&
                        t.nic_for_channel(b, channel) != kNoDevice;
  VertexId at = t.device_of_rank(a);
  double latency = 0, bottleneck = std::numeric_limits<double>::infinity();
  std::set<VertexId> seen{at};
  for (std::size_t l : p.links) {
    ASSERT_EQ(t.link_source(l), at) << "a broken chain";
    at = t.link_target(l);
    ASSERT_TRUE(seen.insert(at).second) << "device " << t.device(at).id << " twice";
    const int host = t.device(at).host;
    if (via_nics) {
      ASSERT_TRUE(host < 0 || host == t.host_of_rank(a) || host == t.host_of_rank(b)) << "through " << t.device(at).id;
    }
    latency += t.link(l).latency_us;
    bottleneck = std::min(bottleneck, t.link(l).bandwidth_gbps);
  }
  ASSERT_EQ(at, t.device_of_rank(b));
  EXPECT_NEAR(p.latency_us, latency, 1e-9);
  EXPECT_EQ(p.bottleneck_gbps, bottleneck);
  if (via_nics) {
    EXPECT_TRUE(seen.count(t.nic_for_channel(a, channel))) << a << " -> " << b << " channel " << channel;
    EXPECT_TRUE(seen.count(t.nic_for_channel(b, channel))) << a << " -> " << b << " channel " << channel;
  }
}

TEST(NicRoutes, EveryChannelsRoutesAreWellFormed) {
  for (const std::string& spec : std::vector<std::string>{"dgx-a100:nodes=2", "dgx-h100:nodes=3", "dgx1-v100:nodes=2", "pcie-box:nodes=3,nics=2",
                                 "fat-tree:nodes=4,gpus=4,nics=8,leaf_ports=8", "fat-tree:nodes=9,gpus=8,nics=2,leaf_ports=4",
                                 "torus:dims=4x4,per_host=4", data_path("two-nics.json")}) {
    SCOPED_TRACE(spec);
    const Topology t = load_topology(spec);
    for (int c = 0; c < 4; ++c)
      for (int a = 0; a < t.num_ranks(); ++a)
        for (int b = 0; b < t.num_ranks(); ++b) {
          expect_well_formed(t, a, b, c);
          if (HasFatalFailure()) return;
        }
  }
}

// Hosts A and B each with a NIC, host C with two NICs joined inside it; switch s1 holds A's NIC
// and C's first, s2 C's second and B's. s1 -> s2 directly takes 5 us, through host C 2.1 us.
// Ranks: 0 on A, 1 on B, 2 on C.
Topology shortcut_through_a_host(bool switches_joined) {
  Topology t;
  const int a = t.add_host("A"), b = t.add_host("B"), c = t.add_host("C");
  const VertexId ga = t.add_device({"A/gpu", DeviceKind::gpu, a, 100}), na = t.add_device({"A/nic", DeviceKind::nic, a, 0});
  const VertexId gb = t.add_device({"B/gpu", DeviceKind::gpu, b, 100}), nb = t.add_device({"B/nic", DeviceKind::nic, b, 0});
  const VertexId gc = t.add_device({"C/gpu", DeviceKind::gpu, c, 100});
  const VertexId nc1 = t.add_device({"C/nic1", DeviceKind::nic, c, 0}), nc2 = t.add_device({"C/nic2", DeviceKind::nic, c, 0});
  const VertexId s1 = t.add_device({"s1", DeviceKind::net_switch, -1, 0}), s2 = t.add_device({"s2", DeviceKind::net_switch, -1, 0});
  for (auto [g, n] : {std::pair{ga, na}, std::pair{gb, nb}, std::pair{gc, nc1}, std::pair{gc, nc2}})
    t.add_duplex_link(g, n, LinkKind::pcie, 25, 0.5);
  t.add_duplex_link(nc1, nc2, LinkKind::pcie, 25, 0.1);
  for (auto [n, s] : {std::pair{na, s1}, std::pair{nc1, s1}, std::pair{nc2, s2}, std::pair{nb, s2}})
    t.add_duplex_link(n, s, LinkKind::net, 50, 1);
  if (switches_joined) t.add_duplex_link(s1, s2, LinkKind::net, 50, 5);
  t.map_rank(0, ga);
  t.map_rank(1, gb);
  t.map_rank(2, gc);
  t.validate();
  return t;
}

TEST(NicRoutes, TheNetworkLegNeverCutsThroughAHost) {
  const Topology t = shortcut_through_a_host(true);
  const VertexId from = t.device_of_rank(0);
  const std::vector<std::string> shortest = test::path_devices(t, t.device_route(from, t.device_of_rank(1)), from);
  EXPECT_NE(std::find(shortest.begin(), shortest.end(), "C/nic1"), shortest.end());  // the shortcut exists
  EXPECT_EQ(test::path_devices(t, t.route(0, 1), t.device_of_rank(0)),
            (std::vector<std::string>{"A/gpu", "A/nic", "s1", "s2", "B/nic", "B/gpu"}));
  EXPECT_DOUBLE_EQ(t.route(0, 1).latency_us, 8.0);
  EXPECT_EQ(t.routes_from(0)[1].links, t.route(0, 1).links);
}

TEST(NicRoutes, WithoutANetworkPathTheRouteIsTheShortestOne) {
  const Topology t = shortcut_through_a_host(false);  // A's and B's NICs meet only through host C
  EXPECT_EQ(t.route(0, 1).links, t.device_route(t.device_of_rank(0), t.device_of_rank(1)).links);
  EXPECT_EQ(t.routes_from(0)[1].links, t.route(0, 1).links);
}

TEST(NicRoutes, ChannelsOnTheSameNicsShareOnePath) {
  const Topology a100 = load_topology("dgx-a100:nodes=2");  // one NIC per GPU: every channel alike
  EXPECT_EQ(&a100.route(1, 9, 0), &a100.route(1, 9, 5));
  EXPECT_EQ(&a100.route(3, 4, 2), &a100.route(3, 4, 0));  // one host: the channel does not matter
  const Topology two = load_topology(data_path("two-nics.json"));
  EXPECT_EQ(&two.route(0, 2, 0), &two.route(0, 2, 2));
  EXPECT_NE(two.route(0, 2, 0).links, two.route(0, 2, 1).links);
}

TEST(NicRoutes, ConcurrentQueriesAgree) {
  const Topology t = load_topology("fat-tree:nodes=4,gpus=4,nics=8,leaf_ports=8");
  const Topology fresh = t;  // its own empty cache
  std::vector<std::thread> threads;
  std::vector<std::vector<std::size_t>> got(8);
  for (std::size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < fresh.num_ranks(); ++r) got[i].push_back(fresh.route(r, (r + 5) % 16, static_cast<int>(i % 3)).links.size());
    });
  for (auto& th : threads) th.join();
  for (std::size_t i = 0; i < got.size(); ++i)
    for (int r = 0; r < t.num_ranks(); ++r)
      EXPECT_EQ(got[i][static_cast<std::size_t>(r)], t.route(r, (r + 5) % 16, static_cast<int>(i % 3)).links.size());
}

TEST(NicRoutes, NegativeChannelsAreRejected) {
  const Topology t = load_topology("dgx-a100:nodes=2");
  EXPECT_THAT(error_of([&] { (void)t.route(0, 9, -1); }), HasSubstr("route: channel -1 must be >= 0"));
  EXPECT_THAT(error_of([&] { (void)t.nic_for_channel(0, -2); }), HasSubstr("channel -2 must be >= 0"));
  EXPECT_THAT(error_of([&] { (void)t.local_nics(16); }), HasSubstr("rank 16 out of range"));
}

// Copies share the paths their searches find (Topology::legs_) while their graphs have the same
// links and latencies: every route of a copy, read after the original and a sibling read theirs
// on several threads, is the one a machine built afresh with the same change finds, bottleneck
// included (it is the copy's own); a copy whose latencies changed finds its own paths.
TEST(NicRoutes, CopiesShareThePathsTheyFindWhileTheirLatenciesAgree) {
  for (const char* spec : {"dgx-a100:nodes=3", "fat-tree:nodes=6,gpus=2,nics=1,leaf_ports=4,oversub=2"}) {
    const Topology t = load_topology(spec);
    const Topology pcie = t.with_scaled_bandwidth(LinkKind::pcie, 3);
    // The first link of rank 0's route to its host-mate, made slow enough to take another path.
    const auto slow_down = [&t](Topology& m) {
      const std::size_t link = t.route(0, 1).links.front();
      m.set_link_figures(link, m.link(link).bandwidth_gbps, 1000);
    };
    Topology slower = t;
    slow_down(slower);
    const auto all_routes = [](const Topology& m) {
      std::vector<Path> out;
      for (int c = 0; c < 3; ++c)
        for (int a = 0; a < m.num_ranks(); ++a)
          for (int b = 0; b < m.num_ranks(); ++b) out.push_back(m.route(a, b, c));
      return out;
    };
    std::vector<std::thread> threads;
    for (const Topology* m : std::initializer_list<const Topology*>{&t, &pcie, &slower})
      threads.emplace_back([&all_routes, m] { (void)all_routes(*m); });
    for (auto& th : threads) th.join();
    const auto links_of = [&all_routes](const Topology& m) {
      std::vector<std::vector<std::size_t>> out;
      for (const Path& p : all_routes(m)) out.push_back(p.links);
      return out;
    };
    ASSERT_NE(links_of(slower), links_of(t)) << spec << ": the slow links change no path";
    Topology fresh_slower = load_topology(spec);
    slow_down(fresh_slower);
    const std::vector<std::pair<const Topology*, Topology>> pairs = {
        {&pcie, load_topology(spec).with_scaled_bandwidth(LinkKind::pcie, 3)}, {&slower, fresh_slower}};
    for (const auto& [copy, fresh] : pairs) {
      const std::vector<Path> mine = all_routes(*copy), theirs = all_routes(fresh);
      ASSERT_EQ(mine.size(), theirs.size());
      for (std::size_t i = 0; i < mine.size(); ++i) {
        ASSERT_EQ(mine[i].links, theirs[i].links) << spec << " route " << i;
        ASSERT_EQ(mine[i].latency_us, theirs[i].latency_us) << spec << " route " << i;
        ASSERT_EQ(mine[i].bottleneck_gbps, theirs[i].bottleneck_gbps) << spec << " route " << i;
      }
    }
  }
}

// A change of the rank map keeps the paths between devices the machine found (with_nvls_switch
// adds each host's NVSwitch as a rank to a copy): every route of the copy, on every channel, is
// the one the same copy of a freshly loaded machine finds, bottleneck included.
TEST(NicRoutes, SwitchRanksAddedToACopyRouteAsOnAFreshMachine) {
  for (const char* spec : {"dgx-h100:nodes=2", "dgx-h100:nodes=3"}) {
    const Topology t = load_topology(spec);
    for (int c = 0; c < 2; ++c)
      for (int a = 0; a < t.num_ranks(); ++a)
        for (int b = 0; b < t.num_ranks(); ++b) (void)t.route(a, b, c);
    const Topology mine = with_nvls_switch(t), theirs = with_nvls_switch(load_topology(spec));
    ASSERT_EQ(mine.num_ranks(), t.num_ranks() + t.num_hosts());
    for (int c = 0; c < 2; ++c)
      for (int a = 0; a < mine.num_ranks(); ++a)
        for (int b = 0; b < mine.num_ranks(); ++b) {
          const Path& x = mine.route(a, b, c);
          const Path& y = theirs.route(a, b, c);
          ASSERT_EQ(x.links, y.links) << spec << " " << a << " -> " << b << " channel " << c;
          ASSERT_EQ(x.latency_us, y.latency_us);
          ASSERT_EQ(x.bottleneck_gbps, y.bottleneck_gbps);
        }
  }
}

}  // namespace
}  // namespace colltune::topo
