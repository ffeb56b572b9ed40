// nccl_nvls in the simulator: the NVSwitch as a rank (topo::with_nvls_switch) where the host's
// switch reduces (dgx-h100) and refused where it does not (dgx-a100); the analytic pricer (a
// switch helper has a port per GPU link) against the event simulator; and NVLS's point: less
// traffic per GPU link than a ring, so more bus bandwidth at 1 GiB.
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

TEST(NvlsSwitch, DgxH100GetsTheSwitchAsItsLastRank) {
  const topo::Topology base = topo::load_topology("dgx-h100");
  const topo::Topology t = topo::with_nvls_switch(base);
  ASSERT_EQ(t.num_ranks(), base.num_ranks() + 1);
  const topo::Device& sw = t.device(t.device_of_rank(base.num_ranks()));
  EXPECT_EQ(sw.kind, topo::DeviceKind::nvswitch);
  EXPECT_EQ(sw.switch_reduction, topo::SwitchReduction::nvls);
  EXPECT_EQ(t.rank_layout().nhosts(), 1);  // the switch is inside the host
  // One NVSwitch hop from every GPU: the GPU's own link.
  for (int g = 0; g < base.num_ranks(); ++g) EXPECT_EQ(t.route(g, base.num_ranks()).links.size(), 1U) << g;
  const CostModel model(t);
  EXPECT_TRUE(model.levels.switch_helpers);
  EXPECT_FALSE(CostModel(base).levels.switch_helpers);
}

TEST(NvlsSwitch, DgxA100HasNoSwitchThatReduces) {
  EXPECT_THAT(
      [] { topo::with_nvls_switch(topo::load_topology("dgx-a100")); },
      ::testing::ThrowsMessage<Error>(HasSubstr("no NVSwitch that reduces in the switch (switch_reduction nvls)")));
  EXPECT_THAT([] { topo::with_nvls_switch(topo::load_topology("flat:ranks=4")); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no NVSwitch that reduces")));
}

TEST(NvlsSwitch, MultiNodeIsNotApplicable) {
  const topo::Topology t = topo::with_nvls_switch(topo::load_topology("dgx-h100:nodes=2"));
  const CostModel model(t);
  EXPECT_TRUE(std::isinf(model.time_us(request("nccl_nvls", 64 << 20))));
}

TEST(NvlsSwitch, EventSimulationAgreesWithTheAnalyticModel) {
  const topo::Topology t = topo::with_nvls_switch(topo::load_topology("dgx-h100"));
  const CostModel model(t);
  for (std::size_t bytes : {std::size_t{64} << 10, std::size_t{4} << 20, std::size_t{256} << 20, kGiB}) {
    for (std::size_t chunk : {std::size_t{0}, std::size_t{1} << 18}) {
      const CollectiveRequest req = request("nccl_nvls", bytes, chunk);
      const double analytic = model.time_us(req);
      const double event = simulate_collective(model, t, req).time_us;
      EXPECT_NEAR(event, analytic, 0.02 * analytic) << bytes << " B, chunk " << chunk;
    }
  }
}

// The switch's port per GPU is what makes NVLS fast: with one port (a helper that is a host,
// as a parameter server) the switch would take in L n through one link.
TEST(NvlsSwitch, TheSwitchHasAPortPerGpuLink) {
  const topo::Topology t = topo::with_nvls_switch(topo::load_topology("dgx-h100"));
  const CostModel model(t);
  const coll::Algorithm& nvls = coll::find_algorithm("nccl_nvls");
  const std::size_t bytes = 256 << 20;
  const double per_link = hint_or_price(nvls, model.layout, bytes, 4, {}, model.levels);
  coll::LevelCosts one_port = model.levels;
  one_port.switch_helpers = false;
  const double one = hint_or_price(nvls, model.layout, bytes, 4, {}, one_port);
  EXPECT_GT(one, 4 * per_link);
  // Up and down overlap in the pipeline: about n / B, at least that.
  const double n_over_b = static_cast<double>(bytes) * model.levels.beta_intra_us_per_byte;
  EXPECT_GT(per_link, n_over_b);
  EXPECT_LT(per_link, 1.25 * n_over_b);
}

TEST(NvlsSwitch, MoreBusBandwidthThanNcclsRingOnDgxH100At1GiB) {
  const topo::Topology base = topo::load_topology("dgx-h100");
  const topo::Topology t = topo::with_nvls_switch(base);
  const int gpus = base.num_ranks();
  const double ring = CostModel(base).time_us(request("nccl_ring", kGiB));
  const double nvls = CostModel(t).time_us(request("nccl_nvls", kGiB));
  auto busbw = [&](double us) { return static_cast<double>(kGiB) / us / 1e3 * 2.0 * (gpus - 1) / gpus; };
  EXPECT_GT(busbw(nvls), busbw(ring)) << "nvls " << nvls << " us, ring " << ring << " us";
}
