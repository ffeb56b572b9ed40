// colltune sweep: the axes, the specs of each point, and each point equal to tune() alone.
#include <gtest/gtest.h>

#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/sweep.hpp"

namespace {

using namespace colltune;
using namespace colltune::tuner;

TEST(Sweep, ParsesAnAxis) {
  const SweepAxis a = parse_sweep_axis("nodes=1,2,4");
  EXPECT_EQ(a.key, "nodes");
  EXPECT_EQ(a.values, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_THROW(parse_sweep_axis("nodes"), Error);
  EXPECT_THROW(parse_sweep_axis("nodes="), Error);
  EXPECT_THROW(parse_sweep_axis("nodes=1,,4"), Error);
  EXPECT_THROW(parse_sweep_axis("=1,2"), Error);
}

TEST(Sweep, PointSpecsOverrideOrAddParameters) {
  const std::vector<SweepAxis> axes{{"nic_gbit", {"400"}}, {"batch", {"64"}}};
  EXPECT_EQ(sweep_topology_spec("fat-tree:nodes=4", axes, {"400", "64"}), "fat-tree:nodes=4,nic_gbit=400");
  EXPECT_EQ(sweep_topology_spec("fat-tree:nic_gbit=100,nodes=4", axes, {"400", "64"}),
            "fat-tree:nic_gbit=400,nodes=4");
  EXPECT_EQ(sweep_topology_spec("dgx-h100", axes, {"400", "64"}), "dgx-h100:nic_gbit=400");
  EXPECT_EQ(sweep_model_spec("resnet50", axes, {"400", "64"}), "resnet50:batch=64");
  EXPECT_EQ(sweep_model_spec("resnet50:tflops=300", axes, {"400", "64"}), "resnet50:tflops=300,batch=64");
  const std::vector<SweepAxis> models{{"model", {"vgg16"}}};
  EXPECT_EQ(sweep_model_spec("resnet50", models, {"vgg16"}), "vgg16");
  EXPECT_EQ(sweep_topology_spec("dgx-h100:nodes=2", models, {"vgg16"}), "dgx-h100:nodes=2");
}

// A sweep is a loop over tune(): each point equals the tune of its topology and model, with the
// same step costs (sweep --cost, as tune --cost; not the defaults, so that they must be passed on).
TEST(Sweep, EachPointIsTheTuneOfThatPoint) {
  SweepSpec spec;
  spec.topology = "dgx-h100";
  spec.model = "resnet50";
  spec.axes = {{"nodes", {"1", "2"}}, {"model", {"resnet50", "bert-base"}}};
  sim::set_step_cost(spec.costs, "tensor_us=20");
  const SweepResult r = run_sweep(spec);
  ASSERT_EQ(r.points.size(), 4u);
  EXPECT_EQ(r.points[1].values, (std::vector<std::string>{"1", "bert-base"}));
  for (const SweepPoint& p : r.points) {
    const topo::Topology t = topo::load_topology(p.topology);
    const sim::Workload w = sim::load_workload(p.model);
    SimulatedObjective objective(t, w, sim::Engine::analytic, spec.runtime, spec.costs);
    const TuneResult alone = tune(t, w, objective, TuneOptions{});
    if (t.num_ranks() > 1) {  // one GPU reduces nothing: no buffers to charge
      SimulatedObjective defaults(t, w, sim::Engine::analytic, spec.runtime);
      EXPECT_GT(p.default_step_us, defaults.evaluate(alone.baseline.candidate)) << p.topology << " " << p.model;
    }
    EXPECT_EQ(p.tuned_step_us, alone.best.step_time_us) << p.topology << " " << p.model;
    EXPECT_EQ(p.default_step_us, alone.baseline.step_time_us) << p.topology << " " << p.model;
    EXPECT_EQ(p.tuned, alone.best.candidate) << p.topology << " " << p.model;
    EXPECT_EQ(p.ranks, t.num_ranks());
  }
  EXPECT_NE(sweep_csv(r).find("nodes,model,topology"), std::string::npos);
  EXPECT_NE(sweep_json(r).find("\"format\": \"colltune-sweep\""), std::string::npos);
}

void expect_error(SweepSpec spec, const std::string& part) {
  try {
    run_sweep(spec);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Sweep, BadInputIsOneLineBeforeAnyTuning) {
  SweepSpec spec;
  spec.topology = "dgx-h100";
  spec.model = "resnet50";
  spec.axes = {{"nodes", {"1", "2"}}, {"nic_bits", {"100"}}};
  expect_error(spec, "--vary nodes=1, nic_bits=100: preset dgx-h100: unknown parameter 'nic_bits'");
  spec.axes = {{"model", {"resnet50", "no-such-model"}}};
  expect_error(spec, "--vary model=no-such-model:");
  spec.axes = {};
  expect_error(spec, "--vary: give one or two");
  spec.axes = {{"nodes", {"1"}}, {"nodes", {"2"}}};
  expect_error(spec, "--vary nodes given twice");
  spec.axes = {{"nodes", std::vector<std::string>(100, "1")}, {"oversub", std::vector<std::string>(11, "1")}};
  expect_error(spec, "above the limit of 1000 points");
}

}  // namespace
