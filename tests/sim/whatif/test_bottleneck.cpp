// What limits a prediction (sim/bottleneck.hpp): each resource twice as fast in turn.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "colltune/sim/bottleneck.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/sim/step_model.hpp"

namespace colltune::sim {
namespace {

// colltune's ring at `bytes` on a machine, by the analytic cost model.
TopologyPrice ring(std::size_t bytes) {
  return [bytes](const topo::Topology& t) {
    CollectiveRequest r;
    r.algorithm = "ring";
    r.bytes = bytes;
    return CostModel(t).time_us(r);
  };
}

TEST(Bottleneck, NamesTheLinkWhereItSits) {
  const topo::Topology fast_nics = topo::load_topology("dgx-a100:nodes=2,nic_gbit=400");
  double rate = 0;
  EXPECT_EQ(describe_link(fast_nics, topo::LinkKind::pcie, &rate),
            "PCIe Gen4 x16 between GPU and NIC, 31.5 GB/s, not the 50 GB/s NIC");
  EXPECT_NEAR(rate, 31.5, 0.1);
  EXPECT_EQ(describe_link(topo::load_topology("dgx-a100:nodes=2"), topo::LinkKind::net),
            "the network (ib) between NIC and network switch, 25 GB/s");
  EXPECT_EQ(describe_link(topo::load_topology("dgx-h100"), topo::LinkKind::nvlink),
            "NVLink between GPU and NVSwitch, 450 GB/s");
  EXPECT_EQ(describe_link(topo::load_topology("dgx-h100"), topo::LinkKind::net), "");  // one host: no network on the route
}

TEST(Bottleneck, ALinkClassOffTheRouteBetweenHostsHasItsRate) {
  // On two DGX H100s the route between hosts has no NVLink; a price that only NVLink moves
  // still names it with its rate (the text and the JSON's rate_gbps), not a rate of 0.
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const TopologyPrice nvlink_bound = [](const topo::Topology& m) {
    double slowest = 1e300;
    for (std::size_t l = 0; l < m.num_links(); ++l)
      if (m.link(l).kind == topo::LinkKind::nvlink) slowest = std::min(slowest, m.link(l).bandwidth_gbps);
    return 1e6 / slowest;
  };
  const Bottleneck b = find_bottleneck(t, nvlink_bound);
  EXPECT_EQ(b.resource, "nvlink") << b.line();
  EXPECT_DOUBLE_EQ(b.rate_gbps, 450);
  EXPECT_EQ(b.description, "NVLink, 450 GB/s, off the route between hosts");
}

TEST(Bottleneck, LargeMessagesAreBandwidthSmallOnesLatency) {
  const topo::Topology hdr = topo::load_topology("dgx-a100:nodes=2");
  const Bottleneck big = find_bottleneck(hdr, ring(std::size_t{256} << 20));
  EXPECT_EQ(big.resource, "net") << big.line();
  EXPECT_LT(big.faster_us, big.time_us);
  // 400 Gb/s NICs behind PCIe Gen4: the PCIe link limits, not the NIC.
  const Bottleneck ndr = find_bottleneck(topo::load_topology("dgx-a100:nodes=2,nic_gbit=400"), ring(std::size_t{256} << 20));
  EXPECT_EQ(ndr.resource, "pcie") << ndr.line();
  EXPECT_NE(ndr.line().find("not the 50 GB/s NIC"), std::string::npos) << ndr.line();
  EXPECT_EQ(find_bottleneck(hdr, ring(4096)).resource, "latency");
}

TEST(Bottleneck, NothingMovesItAModelCapsIt) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const auto flat = [](const topo::Topology&) { return 100.0; };
  EXPECT_EQ(find_bottleneck(t, flat, {}, true).resource, "runtime-model");
  const Bottleneck fixed = find_bottleneck(t, flat);
  EXPECT_EQ(fixed.resource, "fixed");
  EXPECT_EQ(fixed.faster_us, fixed.time_us);
}

TEST(Bottleneck, TwoLinksThatLimitTogether) {
  // A price limited by the slower of PCIe and the network: neither alone moves it.
  const auto both = [](const topo::Topology& t) {
    double pcie = 0, net = 0;
    for (std::size_t l = 0; l < t.num_links(); ++l) {
      if (t.link(l).kind == topo::LinkKind::pcie) pcie = std::max(pcie, t.link(l).bandwidth_gbps);
      if (t.link(l).kind == topo::LinkKind::net) net = std::max(net, t.link(l).bandwidth_gbps);
    }
    return 1e6 / std::min(pcie, net * 1.2603);  // 31.5075 against PCIe Gen4 31.5077 GB/s
  };
  const Bottleneck b = find_bottleneck(topo::load_topology("dgx-a100:nodes=2"), both);
  EXPECT_EQ(b.resource, "links") << b.line();
}

// Every link class at once is named only where no one resource moves the prediction by 1 %:
// where one does, the pick is the same with or without it (simulate then does not price it).
TEST(Bottleneck, AllLinksCountOnlyWhereNoOneResourceMoves) {
  const std::vector<WhatIf> singles = {
      {"pcie", "PCIe", 31.5, 99.5}, {"net", "the network", 25, 98.0}, {"latency", "link latency", 0, 99.9}};
  EXPECT_TRUE(one_resource_moves(100, singles));
  std::vector<WhatIf> all = singles;
  all.insert(all.begin() + 2, WhatIf{"links", "every link class at once", 0, 50.0});
  for (const std::vector<WhatIf>* priced : std::initializer_list<const std::vector<WhatIf>*>{&singles, &all}) {
    const Bottleneck b = pick_bottleneck(100, *priced, false);
    EXPECT_EQ(b.resource, "net");
    EXPECT_EQ(b.faster_us, 98.0);
  }
  // Within 1 % alone, together 2x: only the links name it.
  const std::vector<WhatIf> barely = {{"pcie", "PCIe", 31.5, 99.5}, {"net", "the network", 25, 99.1}};
  EXPECT_FALSE(one_resource_moves(100, barely));
  std::vector<WhatIf> with_links = barely;
  with_links.push_back({"links", "every link class at once", 0, 50.0});
  EXPECT_EQ(pick_bottleneck(100, with_links, false).resource, "links");
  EXPECT_EQ(pick_bottleneck(100, barely, false).resource, "fixed");
  // "links" itself never counts as one resource.
  EXPECT_FALSE(one_resource_moves(100, {{"links", "every link class at once", 0, 50.0}}));
}

TEST(Bottleneck, AStepNamesComputeAndWhatComesNext) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const Workload w = make_profile("resnet50", {.gpu = "a100"});
  const StepPrice price = [](const topo::Topology& m, const Workload& wl, const StepCosts& c, double cycle) {
    StepConfig config;
    config.cycle_time_us *= cycle;
    return StepSimulator(m, c).run(wl, config).step_time_us;
  };
  const StepSimulator simulator(t);
  const Bottleneck b = step_bottleneck(t, w, {}, simulator.costs(), price);
  EXPECT_EQ(b.resource, "compute") << b.line();
  EXPECT_NEAR(b.time_us, simulator.run(w, {}).step_time_us, 1e-9 * b.time_us);
  // A slow network makes the step communication-bound.
  const topo::Topology slow = topo::load_topology("dgx-a100:nodes=2,nic_gbit=10");
  EXPECT_EQ(step_bottleneck(slow, w, {}, StepSimulator(slow).costs(), price).resource, "net");
}

TEST(Bottleneck, HalvedOverheads) {
  StepCosts c;
  c.fusion_copy_gbps = 100;
  c.negotiation_base_us = 20;
  const StepCosts h = halved_overheads(c);
  EXPECT_DOUBLE_EQ(h.launch_us, c.launch_us / 2);
  EXPECT_DOUBLE_EQ(h.fusion_copy_gbps, 200);
  EXPECT_DOUBLE_EQ(h.negotiation_base_us, 10);
  EXPECT_DOUBLE_EQ(h.interference, 1.0945);  // half of the default 18.9 % slowdown
}

}  // namespace
}  // namespace colltune::sim
