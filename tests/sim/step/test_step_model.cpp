// The training-step model: Horovod's cycle loop, fusion, compression and overlap.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

// `n` tensors of `count` fp32 elements, all ready when the backward pass starts.
Workload small_tensors(std::size_t n, std::size_t count, double backward_us = 0) {
  Workload w{"small", 10, backward_us, {}};
  for (std::size_t i = 0; i < n; ++i) {
    std::string name = "t";
    name += std::to_string(i);
    w.tensors.push_back({name, count, coll::DType::f32, 0});
  }
  return w;
}

void expect_consistent(const StepResult& r, const Workload& w) {
  EXPECT_DOUBLE_EQ(r.compute_us, w.forward_us + w.backward_us);
  EXPECT_GE(r.exposed_comm_us, 0);
  EXPECT_NEAR(r.step_time_us, r.compute_us + r.exposed_comm_us, 1e-6 * r.step_time_us);
  EXPECT_GT(r.scaling_efficiency, 0);
  EXPECT_LE(r.scaling_efficiency, 1);
  std::size_t tensors = 0;
  double previous_end = 0;
  for (const BufferRecord& b : r.buffers) {
    EXPECT_GE(b.start_us, previous_end);  // one communication stream: buffers in sequence
    EXPECT_GT(b.end_us, b.start_us);
    EXPECT_FALSE(b.algorithm.empty());
    previous_end = b.end_us;
    tensors += b.tensors;
  }
  EXPECT_EQ(tensors, w.tensors.size());
  EXPECT_NEAR(r.step_time_us, w.forward_us + std::max(w.backward_us, previous_end), 1e-6 * r.step_time_us);
}

TEST(StepModel, OneRankHasNoCommunication) {
  const topo::Topology t = topo::load_topology("flat:ranks=1");
  const Workload w = make_profile("resnet50");
  const StepResult r = simulate_step(t, w, {});
  EXPECT_TRUE(r.buffers.empty());
  EXPECT_DOUBLE_EQ(r.step_time_us, w.forward_us + w.backward_us);
  EXPECT_DOUBLE_EQ(r.exposed_comm_us, 0);
  EXPECT_DOUBLE_EQ(r.scaling_efficiency, 1);
}

TEST(StepModel, ResultsAreConsistentForEveryProfileAndAlgorithm) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  StepSimulator sim(t);
  for (const char* model : {"resnet50", "vgg16", "bert-large", "gpt2-xl"}) {
    const Workload w = make_profile(model);
    for (const char* algo : {"ring", "auto"}) {
      StepConfig c;
      c.algorithm = algo;
      SCOPED_TRACE(model);
      SCOPED_TRACE(algo);
      expect_consistent(sim.run(w, c), w);
    }
  }
}

TEST(StepModel, FusionCutsPerMessageLatencyOnSmallTensors) {
  const topo::Topology t = topo::load_topology("flat:ranks=8,alpha=10");
  const Workload w = small_tensors(200, 256);
  StepSimulator sim(t);
  StepConfig fused;
  fused.fusion_threshold_bytes = 64 * MiB;
  StepConfig unfused = fused;
  unfused.fusion_threshold_bytes = 0;
  const StepResult a = sim.run(w, fused);
  const StepResult b = sim.run(w, unfused);
  EXPECT_EQ(a.buffers.size(), 1u);
  EXPECT_EQ(b.buffers.size(), 200u);
  // 199 fewer messages of 2(p-1) alphas each (ring), at the least.
  EXPECT_GT(b.exposed_comm_us - a.exposed_comm_us, 199 * 2 * 7 * 10 * 0.9);
  expect_consistent(a, w);
  expect_consistent(b, w);
}

TEST(StepModel, ThresholdBoundsBufferSize) {
  const topo::Topology t = topo::load_topology("flat:ranks=4");
  const Workload w = small_tensors(64, 1024);  // 4 KiB each
  StepConfig c;
  c.fusion_threshold_bytes = 16 * KiB;
  const StepResult r = simulate_step(t, w, c);
  EXPECT_EQ(r.buffers.size(), 16u);
  for (const BufferRecord& b : r.buffers) EXPECT_LE(b.bytes, 16 * KiB);
}

TEST(StepModel, HugeCycleTimeDelaysCommunication) {
  const topo::Topology t = topo::load_topology("flat:ranks=8,bw=100");
  const Workload w = make_profile("resnet50");
  StepSimulator sim(t);
  StepConfig quick;
  quick.cycle_time_us = 100;
  StepConfig slow = quick;
  slow.cycle_time_us = 10 * w.backward_us;
  const StepResult a = sim.run(w, quick);
  const StepResult b = sim.run(w, slow);
  ASSERT_FALSE(b.buffers.empty());
  EXPECT_GE(b.buffers.front().start_us, slow.cycle_time_us);  // nothing goes before the first tick
  EXPECT_GT(b.step_time_us, a.step_time_us + 8 * w.backward_us);
  expect_consistent(b, w);
}

TEST(StepModel, Fp16CompressionHelpsOnASlowNetwork) {
  const topo::Topology t = topo::load_topology("flat:ranks=8,bw=1");
  const Workload w = make_profile("resnet50");
  StepSimulator sim(t);
  StepConfig plain;
  StepConfig half = plain;
  half.fp16_compress = true;
  const StepResult a = sim.run(w, plain);
  const StepResult b = sim.run(w, half);
  EXPECT_GT(a.exposed_comm_us, 0);
  EXPECT_LT(b.exposed_comm_us, a.exposed_comm_us * 0.6);
  std::size_t bytes_a = 0, bytes_b = 0;
  for (const BufferRecord& r : a.buffers) bytes_a += r.bytes;
  for (const BufferRecord& r : b.buffers) bytes_b += r.bytes;
  EXPECT_NEAR(static_cast<double>(bytes_b), static_cast<double>(bytes_a) / 2, static_cast<double>(bytes_a) * 0.01);
}

TEST(StepModel, CommunicationOverlapsTheBackwardPass) {
  // A fast network and a long backward pass: all but the last buffers hide under compute.
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=1");
  const Workload w = parse_profile_spec("resnet50:batch=256");
  const StepResult r = simulate_step(t, w, {});
  const double comm = [&] {
    double s = 0;
    for (const BufferRecord& b : r.buffers) s += b.end_us - b.start_us;
    return s;
  }();
  EXPECT_LT(r.exposed_comm_us, comm);
  EXPECT_GT(r.scaling_efficiency, 0.8);
}

TEST(StepModel, AutoIsNoSlowerThanAnyFixedAlgorithm) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  StepSimulator sim(t);
  const Workload w = make_profile("bert-large");
  StepConfig c;
  c.algorithm = "auto";
  const double best = sim.run(w, c).step_time_us;
  // Every one applies to 16 ranks on 2 hosts: an error here is a failure, not a skip.
  for (const char* algo : {"ring", "tree", "dbtree", "rhd", "hierarchical"}) {
    c.algorithm = algo;
    EXPECT_LE(best, sim.run(w, c).step_time_us * (1 + 1e-12)) << algo;
  }
}

// "auto" with auto_per_host=false chooses among flat algorithms only, and is then no slower than
// any of them.
TEST(StepModel, AutoWithoutPerHostAlgorithmsStaysFlat) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  StepSimulator sim(t);
  const Workload w = make_profile("bert-large");
  StepConfig c;
  c.algorithm = "auto";
  c.auto_per_host = false;
  const StepResult flat = sim.run(w, c);
  for (const BufferRecord& b : flat.buffers)
    EXPECT_EQ(coll::find_algorithm(b.algorithm).placement, coll::Placement::flat) << b.algorithm;
  c.auto_per_host = true;
  EXPECT_LE(sim.run(w, c).step_time_us, flat.step_time_us * (1 + 1e-12));
  for (const char* algo : {"ring", "dbtree", "rhd"}) {
    StepConfig fixed;
    fixed.algorithm = algo;
    EXPECT_LE(flat.step_time_us, sim.run(w, fixed).step_time_us * (1 + 1e-12)) << algo;
  }
}

// A runtime's own price (price_buffer) replaces the algorithm: every buffer takes what it says,
// under its label, and a price that cannot run is an error naming it.
TEST(StepModel, PriceHookPricesEveryBuffer) {
  const topo::Topology t = topo::load_topology("flat:ranks=8");
  const Workload w = small_tensors(20, 1000);
  StepConfig c;
  c.fusion_threshold_bytes = 16000;  // a few tensors of 4000 B per buffer
  c.algorithm = "no-such-algorithm";  // unused: the hook prices
  c.price_buffer = [](std::size_t bytes, std::size_t elem_size, std::size_t) {
    return BufferPrice{"hook/" + std::to_string(elem_size), 1.0 + static_cast<double>(bytes) / 1000.0};
  };
  StepCosts costs;  // the hook's time plus the per-tensor time and the fusion copies (no launch)
  costs.tensor_us = 2;
  costs.fusion_copy_gbps = 10;  // 1e4 bytes per us
  const StepResult r = simulate_step(t, w, c, Engine::analytic, costs);
  expect_consistent(r, w);
  ASSERT_GT(r.buffers.size(), 1u);
  for (const BufferRecord& b : r.buffers) {
    EXPECT_EQ(b.algorithm, "hook/4");
    const double copies = b.tensors > 1 ? 2.0 * static_cast<double>(b.bytes) / 1e4 : 0;
    EXPECT_NEAR(b.end_us - b.start_us,
                1.0 + static_cast<double>(b.bytes) / 1000.0 + 2.0 * static_cast<double>(b.tensors) + copies, 1e-9);
  }
  c.price_buffer = [](std::size_t, std::size_t, std::size_t) { return BufferPrice{"never", std::numeric_limits<double>::infinity()}; };
  EXPECT_THROW(simulate_step(t, w, c), Error);
}

TEST(StepModel, NegotiationIsChargedPerCycle) {
  const topo::Topology t = topo::load_topology("flat:ranks=8");
  StepSimulator sim(t);
  EXPECT_GT(sim.negotiation_us(), 0);
  const Workload w = small_tensors(1, 1024);
  StepConfig c;
  c.negotiation_us = 500;
  const StepResult r = sim.run(w, c);
  ASSERT_EQ(r.buffers.size(), 1u);
  EXPECT_DOUBLE_EQ(r.buffers[0].start_us, 500);  // tick 0 + negotiation
}

TEST(StepModel, EventEngineAgreesWithAnalyticOnAFlatMachine) {
  const topo::Topology t = topo::load_topology("flat:ranks=8,bw=10");
  StepSimulator sim(t);
  const Workload w = make_profile("resnet50");
  StepConfig c;
  c.fusion_threshold_bytes = 16 * MiB;
  const StepResult a = sim.run(w, c, Engine::analytic);
  const StepResult e = sim.run(w, c, Engine::event);
  ASSERT_EQ(a.buffers.size(), e.buffers.size());
  EXPECT_NEAR(e.step_time_us, a.step_time_us, 0.03 * a.step_time_us);
  expect_consistent(e, w);
}

TEST(StepModel, BadConfigsAreErrors) {
  const topo::Topology t = topo::load_topology("flat:ranks=4");
  StepSimulator sim(t);
  const Workload w = make_profile("resnet50");
  StepConfig c;
  c.algorithm = "bogus";
  EXPECT_THROW(sim.run(w, c), Error);
  c = {};
  c.cycle_time_us = -1;
  EXPECT_THROW(sim.run(w, c), Error);
  Workload bad = w;
  bad.tensors[3].ready_us = bad.backward_us * 2;
  EXPECT_THROW(sim.run(bad, {}), Error);
  EXPECT_EQ(parse_engine("event"), Engine::event);
  EXPECT_THROW(parse_engine("magic"), Error);
}

}  // namespace
}  // namespace colltune::sim
