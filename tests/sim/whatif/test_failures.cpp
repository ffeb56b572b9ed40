// Failures (failures.hpp) and the machine without a host (subset.hpp): expected times computed
// from the inputs and the step model's steps.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/sim/failures.hpp"
#include "colltune/sim/uneven.hpp"
#include "colltune/topology/subset.hpp"
#include "common/expect_error.hpp"

namespace {

using namespace colltune;
using namespace colltune::sim;

using test::expect_error;

TEST(Subset, FindHostByNameOrIndex) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=4");
  EXPECT_EQ(topo::find_host(t, "node2"), 2);
  EXPECT_EQ(topo::find_host(t, "3"), 3);
  EXPECT_EQ(topo::find_host(t, "4"), -1);
  EXPECT_EQ(topo::find_host(t, "node9"), -1);
  EXPECT_EQ(topo::find_host(t, ""), -1);
}

// Without node1 the machine has the other hosts' ranks, renumbered in order, on the same kind of
// devices; its step equals the step on a 3-node preset (the same leaf/spine network).
TEST(Subset, WithoutAHostIsTheRestOfTheMachine) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=4");
  const topo::Topology left = topo::without_hosts(t, {1});
  EXPECT_EQ(left.num_ranks(), t.num_ranks() - 8);
  EXPECT_EQ(left.num_hosts(), 3);
  EXPECT_EQ(left.host_name(1), "node2");
  EXPECT_EQ(left.device(left.device_of_rank(8)).id, t.device(t.device_of_rank(16)).id);
  for (int r = 0; r < left.num_ranks(); ++r) EXPECT_EQ(left.host_of_rank(r), r / 8) << r;
  const Workload w = load_workload("resnet50");
  EXPECT_NEAR(simulate_step(left, w, {}).step_time_us,
              simulate_step(topo::load_topology("dgx-h100:nodes=3"), w, {}).step_time_us, 1e-9);
  expect_error([&] { topo::without_hosts(t, {0, 1, 2, 3}); }, "removing every host");
  expect_error([&] { topo::without_hosts(t, {4}); }, "host 4 is not in 0..3");
}

TEST(Failures, StateBroadcastGrowsWithBytesAndIsFreeAlone) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const double small = state_broadcast_us(t, 1e6), large = state_broadcast_us(t, 1e9);
  EXPECT_GT(small, 0);
  EXPECT_GT(large, 100 * small);
  EXPECT_EQ(state_broadcast_us(topo::load_topology("flat:ranks=1"), 1e9), 0);
}

struct Fixture {
  topo::Topology topology = topo::load_topology("dgx-h100:nodes=4");  // 32 ranks, 8 per host
  Workload workload = load_workload("resnet50");
  StepConfig config;
  FailureOptions options;
  Fixture() {
    options.run_steps = 10000;
    options.samples_per_rank = 64;
    options.commit_every = 100;
    options.checkpoint_every = 1000;
    options.failures = {parse_failure("node1:5051", topology, 10000)};  // 5050 steps done
  }
  FailureResult run() const { return simulate_failures(topology, {}, workload, config, Engine::analytic, options); }
};

TEST(Failures, NothingKeepsOnlyTheStepsBefore) {
  Fixture f;
  const FailureResult r = f.run();
  const double t = simulate_step(f.topology, f.workload, f.config).step_time_us / 1e6;
  EXPECT_DOUBLE_EQ(r.baseline_s, 10000 * t);
  EXPECT_DOUBLE_EQ(r.nothing.run_s, 10000 * t);
  EXPECT_DOUBLE_EQ(r.nothing.samples, 5050.0 * 64 * 32);
  EXPECT_NEAR(r.nothing.throughput, 5050.0 * 64 * 32 / (10000 * t), 1e-9 * r.nothing.throughput);
  EXPECT_NEAR(r.nothing.lost_s, 4950 * t, 1e-9);
}

// Elastic: back to the commit at step 5000, detection + rendezvous + the state's broadcast over
// the 24 survivors, then the rest of the run at their step.
TEST(Failures, ElasticContinuesAtTheRepricedStep) {
  Fixture f;
  const FailureResult r = f.run();
  const double t = simulate_step(f.topology, f.workload, f.config).step_time_us / 1e6;
  const topo::Topology left = topo::without_hosts(f.topology, {1});
  const double t_left = simulate_step(left, f.workload, f.config).step_time_us / 1e6;
  const double state = default_state_bytes(f.workload);
  EXPECT_DOUBLE_EQ(state, 8.0 * static_cast<double>(f.workload.total_params()));
  const double bcast = state_broadcast_us(left, state) / 1e6;
  ASSERT_EQ(r.stages.size(), 1u);
  EXPECT_EQ(r.stages[0].ranks, 24);
  EXPECT_EQ(r.stages[0].resumed_from, 5000);
  EXPECT_DOUBLE_EQ(r.stages[0].step_us, t_left * 1e6);
  const double recover = 30 + 10 + bcast;
  EXPECT_NEAR(r.elastic.run_s, 5050 * t + recover + 5000 * t_left, 1e-9);
  EXPECT_NEAR(r.elastic.lost_s, recover + 50 * t, 1e-9);
  EXPECT_DOUBLE_EQ(r.elastic.samples, 5000.0 * 64 * 32 + 5000.0 * 64 * 24);
  EXPECT_NEAR(r.elastic.throughput, r.elastic.samples / r.elastic.run_s, 1e-9);
  EXPECT_EQ(r.elastic.redone_steps, 50);
  EXPECT_EQ(r.elastic.final_ranks, 24);
}

// Checkpoint: 10 writes (steps 1000..10000), a relaunch that reads the checkpoint of step 5000,
// broadcasts it over all 32 ranks, and redoes 50 steps.
TEST(Failures, CheckpointRedoesTheStepsSinceTheLastOne) {
  Fixture f;
  f.options.storage_gbps = 4;
  const FailureResult r = f.run();
  const double t = simulate_step(f.topology, f.workload, f.config).step_time_us / 1e6;
  const double state = default_state_bytes(f.workload);
  const double io = state / 4e9;
  EXPECT_DOUBLE_EQ(r.checkpoint_write_s, io);
  const double restart = 30 + 60 + io + state_broadcast_us(f.topology, state) / 1e6;
  EXPECT_NEAR(r.checkpoint.run_s, 10050 * t + 10 * io + restart, 1e-9);
  EXPECT_NEAR(r.checkpoint.lost_s, 10 * io + restart + 50 * t, 1e-9);
  EXPECT_DOUBLE_EQ(r.checkpoint.samples, 10000.0 * 64 * 32);
  EXPECT_EQ(r.checkpoint.redone_steps, 50);
}

// Two hosts at one step are one recovery; a later one starts from the resync, not an older commit.
TEST(Failures, SeveralFailures) {
  Fixture f;
  f.options.failures = {parse_failure("node1:2001", f.topology, 10000), parse_failure("3:2001", f.topology, 10000),
                        parse_failure("node0:2031", f.topology, 10000)};
  const FailureResult r = f.run();
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].ranks, 16);
  EXPECT_EQ(r.stages[1].ranks, 8);
  EXPECT_EQ(r.stages[1].resumed_from, 2000);  // the resync at 2000, no commit since
  EXPECT_EQ(r.elastic.redone_steps, 30);
  EXPECT_DOUBLE_EQ(r.stages[1].step_us,
                   simulate_step(topo::without_hosts(f.topology, {0, 1, 3}), f.workload, f.config).step_time_us);
}

// --slow: every step runs at the slowest living rank's speed; when the slow host dies, the
// survivors run at full speed.
TEST(Failures, ASlowHostsDeathSpeedsUpTheSurvivors) {
  Fixture f;
  f.options.rank_factor.assign(32, 1.0);
  for (int r = 8; r < 16; ++r) f.options.rank_factor[static_cast<std::size_t>(r)] = 1.5;  // node1
  const FailureResult r = f.run();
  EXPECT_DOUBLE_EQ(r.step_us, simulate_step(f.topology, with_compute_scaled(f.workload, 1.5), f.config).step_time_us);
  ASSERT_EQ(r.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(r.stages[0].step_us,
                   simulate_step(topo::without_hosts(f.topology, {1}), f.workload, f.config).step_time_us);
  EXPECT_LT(r.stages[0].step_us, r.step_us);
}

TEST(Failures, BadInputNamesIt) {
  Fixture f;
  expect_error([&] { parse_failure("node1:10001", f.topology, 10000); }, "after the last step of the run");
  expect_error([&] { parse_failure("node9:5", f.topology, 10000); }, "no host 'node9'");
  expect_error([&] { parse_failure("7:5", f.topology, 10000); }, "no host '7'");
  expect_error([&] { parse_failure("node1:0", f.topology, 10000); }, "steps count from 1");
  expect_error([&] { parse_failure("node1:-3", f.topology, 10000); }, "whole number");
  expect_error([&] { parse_failure("node1", f.topology, 10000); }, "expected HOST:STEP");
  Fixture every;
  every.options.failures.clear();
  for (int h = 0; h < 4; ++h) every.options.failures.push_back({h, 10 + h});
  expect_error([&] { every.run(); }, "every host of the topology fails");
  Fixture twice;
  twice.options.failures.push_back({1, 7000});
  expect_error([&] { twice.run(); }, "host node1 fails twice");
  Fixture zero;
  zero.options.checkpoint_every = 0;
  expect_error([&] { zero.run(); }, "--checkpoint-every 0");
}

}  // namespace
