// Uneven data under hvd.join (uneven.hpp): expected epochs computed from the step model's step.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/sim/uneven.hpp"
#include "common/expect_error.hpp"

namespace {

using namespace colltune;
using namespace colltune::sim;

struct Fixture {
  topo::Topology topology = topo::load_topology("dgx-h100:nodes=2");  // 16 ranks, hosts node0, node1
  Workload workload = load_workload("resnet50");
  StepSimulator simulator{topology};
  StepConfig config;
  double step(double factor = 1.0) const { return simulator.run(with_compute_scaled(workload, factor), config).step_time_us; }
};

using test::expect_error;

TEST(Uneven, EvenDataLosesNothing) {
  Fixture f;
  const UnevenResult r =
      simulate_uneven(f.simulator, f.workload, f.config, Engine::analytic, std::vector<long>(16, 200));
  EXPECT_EQ(r.steps, 200);
  EXPECT_EQ(r.total_batches, 3200);
  EXPECT_DOUBLE_EQ(r.epoch_us, 200 * f.step());
  EXPECT_DOUBLE_EQ(r.loss_us, 0.0);
  EXPECT_EQ(r.idle_rank_steps, 0);
}

// A joined rank still takes part in every allreduce (zeros), so the steps after it joins cost
// a whole step: the epoch is the largest count's steps; the even split of the same total is
// shorter by what the short rank left to the others.
TEST(Uneven, AShortRankLeavesTheEpochAtTheLongestCount) {
  Fixture f;
  std::vector<long> batches(16, 1000);
  apply_uneven("3:600", f.topology, batches);
  EXPECT_EQ(batches[3], 600);
  const UnevenResult r = simulate_uneven(f.simulator, f.workload, f.config, Engine::analytic, batches);
  const long total = 15 * 1000 + 600;
  EXPECT_EQ(r.total_batches, total);
  EXPECT_EQ(r.steps, 1000);
  EXPECT_EQ(r.even_steps, (total + 15) / 16);
  EXPECT_NEAR(r.epoch_us, 1000 * f.step(), 1e-6 * r.epoch_us);
  EXPECT_NEAR(r.even_epoch_us, static_cast<double>((total + 15) / 16) * f.step(), 1e-6 * r.epoch_us);
  EXPECT_NEAR(r.loss_us, r.epoch_us - r.even_epoch_us, 1e-9);
  EXPECT_EQ(r.idle_rank_steps, 400);
  EXPECT_DOUBLE_EQ(r.idle_fraction, 400.0 / (16.0 * 1000.0));
}

// With a slow rank, it governs compute only while it computes: once it joins, the others' own
// speed sets the step.
TEST(Uneven, ASlowRankGovernsOnlyUntilItJoins) {
  Fixture f;
  std::vector<long> batches(16, 1000);
  batches[3] = 600;
  std::vector<double> factor(16, 1.0);
  factor[3] = 1.5;
  const UnevenResult r = simulate_uneven(f.simulator, f.workload, f.config, Engine::analytic, batches, factor);
  EXPECT_NEAR(r.epoch_us, 600 * f.step(1.5) + 400 * f.step(), 1e-6 * r.epoch_us);
  // The even split (975 each, 15600 = 16 x 975): rank 3 computes every step.
  EXPECT_NEAR(r.even_epoch_us, 975 * f.step(1.5), 1e-6 * r.epoch_us);
}

TEST(Uneven, AHostIsEveryRankOnIt) {
  Fixture f;
  std::vector<long> batches(16, 1000);
  apply_uneven("node1:500", f.topology, batches);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(batches[static_cast<std::size_t>(r)], r >= 8 ? 500 : 1000) << r;
}

TEST(Uneven, EvenSplitAndSpread) {
  EXPECT_EQ(even_split(10, 4), (std::vector<long>{3, 3, 2, 2}));
  const std::vector<long> a = spread_batches(1000, "50", 64, 9);
  EXPECT_EQ(a, spread_batches(1000, "50", 64, 9));
  EXPECT_NE(a, spread_batches(1000, "50", 64, 10));
  for (long b : a) {
    EXPECT_GE(b, 950);
    EXPECT_LE(b, 1050);
  }
  for (long b : spread_batches(1000, "10%", 64, 9)) {
    EXPECT_GE(b, 900);
    EXPECT_LE(b, 1100);
  }
  EXPECT_EQ(spread_batches(1000, "0", 4, 1), std::vector<long>(4, 1000));
}

TEST(Uneven, BadInputNamesIt) {
  Fixture f;
  std::vector<long> batches(16, 1000);
  expect_error([&] { apply_uneven("16:5", f.topology, batches); }, "rank 16 is not in 0..15");
  expect_error([&] { apply_uneven("node7:5", f.topology, batches); }, "no rank or host 'node7'");
  expect_error([&] { apply_uneven("3:-5", f.topology, batches); }, "whole number >= 0");
  expect_error([&] { apply_uneven("3", f.topology, batches); }, "expected WHO:N");
  expect_error([] { spread_batches(10, "20", 4, 1); }, "could make a count negative");
  expect_error([] { spread_batches(10, "x", 4, 1); }, "expected a whole number");
  batches[2] = -1;
  expect_error([&] { simulate_uneven(f.simulator, f.workload, f.config, Engine::analytic, batches); },
               "rank 2 has a negative batch count");
  expect_error([&] { simulate_uneven(f.simulator, f.workload, f.config, Engine::analytic, std::vector<long>(3, 1)); },
               "3 batch counts for 16 ranks");
}

}  // namespace
