// colltune sweep --bytes: each point's cells are what simulate predicts on that point's topology,
// loaded here on its own: NCCL's pick priced by colltune's schedule, or colltune's cost model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/nccl_price.hpp"
#include "colltune/sim/priced_machine.hpp"
#include "colltune/tuner/size_sweep.hpp"

using namespace colltune;
using namespace colltune::tuner;

namespace {

SizeSweepSpec spec(const std::string& topology, std::vector<SweepAxis> axes, const std::string& algorithm) {
  SizeSweepSpec s;
  s.topology = topology;
  s.axes = std::move(axes);
  s.sizes = {4 * KiB, 1 * MiB, 256 * MiB};
  s.algorithm = algorithm;
  return s;
}

}  // namespace

TEST(SizeSweep, NcclPointsAreNcclsChoiceOnEachTopology) {
  const SizeSweepResult r = run_size_sweep(spec("dgx-a100", {{"nodes", {"1", "2"}}, {"nic_gbit", {"100", "200"}}}, "nccl"));
  ASSERT_EQ(r.points.size(), 4u);
  EXPECT_EQ(r.points[1].values, (std::vector<std::string>{"1", "200"}));  // first axis slowest
  for (const SizeSweepPoint& p : r.points) {
    const topo::Topology t = topo::load_topology("dgx-a100:nodes=" + p.values[0] + ",nic_gbit=" + p.values[1]);
    EXPECT_EQ(p.ranks, t.num_ranks());
    const auto pricer = sim::make_nccl_pricer(t);  // simulate --algo nccl's price path
    ASSERT_EQ(p.cells.size(), 3u);
    for (const SizeSweepCell& c : p.cells) {
      const sim::NcclPrice pick = pricer->price(sim::NcclColl::allreduce, c.bytes);
      EXPECT_DOUBLE_EQ(c.time_us, pick.time_us) << p.topology << " " << c.bytes;
      EXPECT_EQ(c.choice,
                std::string(sim::to_string(pick.nccl.algo)) + "/" + std::string(sim::to_string(pick.nccl.proto)));
      EXPECT_NEAR(c.busbw_gbps, static_cast<double>(c.bytes) / (c.time_us * 1e3) * 2.0 * (p.ranks - 1) / p.ranks, 1e-12);
    }
  }
  // A faster NIC helps two nodes' large messages, not one node's.
  EXPECT_DOUBLE_EQ(r.points[0].cells[2].time_us, r.points[1].cells[2].time_us);
  EXPECT_LT(r.points[3].cells[2].time_us, r.points[2].cells[2].time_us);
}

TEST(SizeSweep, RegistryAlgorithmIsTheCostModel) {
  const SizeSweepResult r = run_size_sweep(spec("flat", {{"ranks", {"4", "16"}}}, "ring"));
  for (const SizeSweepPoint& p : r.points) {
    const sim::CostModel model(topo::load_topology("flat:ranks=" + p.values[0]));
    for (const SizeSweepCell& c : p.cells) {
      sim::CollectiveRequest request;
      request.algorithm = "ring";
      request.bytes = c.bytes;
      EXPECT_DOUBLE_EQ(c.time_us, model.time_us(request));
      EXPECT_EQ(c.choice, "ring");
    }
  }
  const nlohmann::json j = nlohmann::json::parse(size_sweep_json(r));
  EXPECT_EQ(j["points"][1]["sizes"][2]["bytes"], 256 * MiB);
  EXPECT_NE(size_sweep_csv(r).find("ranks,topology,ranks,bytes"), std::string::npos);
  EXPECT_NE(size_sweep_html(r).find("<svg"), std::string::npos);
}

TEST(SizeSweep, BadInputIsOneError) {
  EXPECT_THROW(run_size_sweep(spec("dgx-a100", {{"model", {"resnet50"}}}, "nccl")), Error);
  EXPECT_THROW(run_size_sweep(spec("dgx-a100", {{"wings", {"2"}}}, "nccl")), Error);
  EXPECT_THROW(run_size_sweep(spec("dgx-a100", {{"nodes", {"1"}}}, "allgather_ring")), Error);
  EXPECT_THROW(run_size_sweep(spec("flat", {{"ranks", {"4"}}}, "nccl")), Error);  // no compute capability
  SizeSweepSpec none = spec("dgx-a100", {{"nodes", {"1"}}}, "nccl");
  none.sizes.clear();
  EXPECT_THROW(run_size_sweep(none), Error);
}
