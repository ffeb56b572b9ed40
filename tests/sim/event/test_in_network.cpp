// nccl_nvls_tree and nccl_collnet in the simulator: every host's NVSwitch as a rank
// (topo::with_nvls_switch) and the network's SHARP switch as one (topo::with_sharp_switch, only
// with a preset's sharp=1); the analytic pricer against the event simulator; and what in-switch
// reduction buys at 1 GiB on four DGX H100s against NCCL's tree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"
#include "sim_request.hpp"

using namespace colltune;
using namespace colltune::sim;
using ::testing::HasSubstr;

using colltune::sim::test::kGiB;
using colltune::sim::test::request;

TEST(InNetworkSwitches, EveryHostGetsItsNvSwitchAsARankAfterTheGpus) {
  const topo::Topology base = topo::load_topology("dgx-h100:nodes=4");
  const topo::Topology t = topo::with_nvls_switch(base);
  ASSERT_EQ(t.num_ranks(), base.num_ranks() + 4);
  const RankLayout layout = t.rank_layout();
  EXPECT_EQ(layout.nhosts(), 4);
  for (int h = 0; h < 4; ++h) {
    const int sw = base.num_ranks() + h;
    EXPECT_EQ(t.device(t.device_of_rank(sw)).kind, topo::DeviceKind::nvswitch);
    EXPECT_EQ(layout.ranks_on_host(h).back(), sw);  // the host's last rank
    for (int g : layout.ranks_on_host(h)) {
      if (g != sw) {
        EXPECT_EQ(t.route(g, sw).links.size(), 1U) << g;  // the GPU's own NVLink
      }
    }
  }
  EXPECT_FALSE(coll::find_algorithm("nccl_nvls_tree").not_applicable(layout, 100, {}).has_value());
  const CostModel model(t);
  EXPECT_TRUE(model.levels.switch_helpers);
  EXPECT_DOUBLE_EQ(model.levels.gamma_us_per_byte, CostModel(base).levels.gamma_us_per_byte);
}

TEST(InNetworkSwitches, TheSharpSwitchOnlyWhereThePresetSaysSharp) {
  EXPECT_THAT([] { topo::with_sharp_switch(topo::load_topology("dgx-h100:nodes=4")); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no network switch that reduces in the switch")));
  const topo::Topology base = topo::load_topology("dgx-h100:nodes=4,sharp=1");
  const topo::Topology t = topo::with_sharp_switch(base);
  ASSERT_EQ(t.num_ranks(), base.num_ranks() + 1);
  const topo::Device& sw = t.device(t.device_of_rank(base.num_ranks()));
  EXPECT_EQ(sw.kind, topo::DeviceKind::net_switch);
  EXPECT_EQ(sw.switch_reduction, topo::SwitchReduction::sharp);
  EXPECT_FALSE(coll::find_algorithm("nccl_collnet").not_applicable(t.rank_layout(), 100, {}).has_value());
  // With leaves and a spine (16 hosts of 8 NICs on 32-port leaves), the spine is the root.
  const topo::Topology big = topo::with_sharp_switch(topo::load_topology("dgx-h100:nodes=16,sharp=1"));
  EXPECT_EQ(big.device(big.device_of_rank(big.num_ranks() - 1)).id, "spine");
  // NVLS-Tree needs NVSwitches that reduce: dgx-a100's do not.
  EXPECT_THAT([] { topo::with_nvls_switch(topo::load_topology("dgx-a100:nodes=2")); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no NVSwitch that reduces in the switch")));
}

TEST(InNetworkSwitches, EventSimulationAndAnalyticModelAgree) {
  const topo::Topology nvls = topo::with_nvls_switch(topo::load_topology("dgx-h100:nodes=4"));
  const topo::Topology sharp = topo::with_sharp_switch(topo::load_topology("dgx-h100:nodes=4,sharp=1"));
  for (const auto& [algo, t] : {std::pair<std::string, const topo::Topology*>{"nccl_nvls_tree", &nvls},
                                std::pair<std::string, const topo::Topology*>{"nccl_collnet", &sharp}}) {
    const CostModel model(*t);
    // Within 5% where bandwidth rules; 10% at 4 MiB, where latency weighs and the analytic pricer
    // charges every message its level's worst route latency.
    for (std::size_t bytes : {std::size_t{4} << 20, std::size_t{64} << 20, std::size_t{256} << 20, kGiB}) {
      const CollectiveRequest req = request(algo, bytes);
      const double analytic = model.time_us(req);
      const double event = simulate_collective(model, *t, req).time_us;
      const double tolerance = bytes < (std::size_t{64} << 20) ? 0.10 : 0.05;
      EXPECT_NEAR(event, analytic, tolerance * analytic) << algo << " " << bytes << " B";
    }
  }
}

// The point of both: NVLS-Tree sums inside the host in the switch (no chain of GPUs), CollNet
// halves what crosses the network; both beat NCCL's tree on four DGX H100s at 1 GiB.
TEST(InNetworkSwitches, BothBeatNcclTreeOnFourDgxH100At1GiB) {
  const topo::Topology base = topo::load_topology("dgx-h100:nodes=4");
  const double tree = CostModel(base).time_us(request("nccl_tree", kGiB));
  const double nvls_tree = CostModel(topo::with_nvls_switch(base)).time_us(request("nccl_nvls_tree", kGiB));
  const topo::Topology sharp = topo::with_sharp_switch(topo::load_topology("dgx-h100:nodes=4,sharp=1"));
  const double collnet = CostModel(sharp).time_us(request("nccl_collnet", kGiB));
  EXPECT_LT(nvls_tree, tree) << "nvls_tree " << nvls_tree << " us, tree " << tree << " us";
  EXPECT_LT(collnet, tree) << "collnet " << collnet << " us, tree " << tree << " us";
  // CollNet's network bytes are half the tree's: with the NICs the bottleneck, well under 3/4.
  EXPECT_LT(collnet, 0.75 * tree);
}

// Without the switches as ranks the machine's own layout has none: both say why.
TEST(InNetworkSwitches, NotApplicableOnTheMachinesOwnRanks) {
  const CostModel model(topo::load_topology("dgx-h100:nodes=4,sharp=1"));
  EXPECT_TRUE(std::isinf(model.time_us(request("nccl_collnet", kGiB))));
  EXPECT_TRUE(std::isinf(model.time_us(request("nccl_nvls_tree", kGiB))));
}
