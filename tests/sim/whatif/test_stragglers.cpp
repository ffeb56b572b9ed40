// Stragglers: the slowest rank of each step sets every allreduce's start (stragglers.hpp).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/sim/stragglers.hpp"
#include "common/expect_error.hpp"

namespace {

using namespace colltune;
using namespace colltune::sim;

struct Fixture {
  topo::Topology topology = topo::load_topology("dgx-h100:nodes=2");
  Workload workload = load_workload("resnet50");
  StepSimulator simulator{topology};
  StepConfig config;
};

// One slow rank: the step is the whole job's step with that rank's compute, and every other
// rank waits (factor - 1) x compute.
TEST(Stragglers, OneSlowRankSetsTheStep) {
  Fixture f;
  std::vector<double> factors(16, 1.0);
  apply_slow("3:1.5x", f.topology, factors);
  EXPECT_EQ(factors[3], 1.5);
  StragglerOptions o;
  o.rank_factor = factors;
  const StragglerResult r = simulate_stragglers(f.simulator, f.workload, f.config, Engine::analytic, o);
  const double expected = f.simulator.run(with_compute_scaled(f.workload, 1.5), f.config).step_time_us;
  EXPECT_EQ(r.mean_us, expected);
  EXPECT_EQ(r.p99_us, expected);
  EXPECT_EQ(r.ideal_us, f.simulator.run(f.workload, f.config).step_time_us);
  EXPECT_GT(r.mean_us, r.ideal_us);
  const double compute = f.workload.forward_us + f.workload.backward_us;
  EXPECT_NEAR(r.waiting_fraction, 15 * 0.5 * compute / (16 * expected), 1e-12);
}

TEST(Stragglers, AHostIsEveryRankOnIt) {
  Fixture f;
  std::vector<double> factors(16, 1.0);
  apply_slow("node1:1.2x", f.topology, factors);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(factors[static_cast<std::size_t>(r)], r >= 8 ? 1.2 : 1.0) << r;
}

// Jitter: the same seed gives the same steps; the quantiles are ordered and above the ideal
// step's median for a median-1 distribution over 16 ranks (the maximum of 16 draws).
TEST(Stragglers, JitterIsSeededAndOrdered) {
  Fixture f;
  StragglerOptions o;
  o.jitter = parse_jitter("lognormal:0.05");
  o.steps = 300;
  o.seed = 5;
  const StragglerResult a = simulate_stragglers(f.simulator, f.workload, f.config, Engine::analytic, o);
  const StragglerResult b = simulate_stragglers(f.simulator, f.workload, f.config, Engine::analytic, o);
  EXPECT_EQ(a.mean_us, b.mean_us);
  EXPECT_EQ(a.p99_us, b.p99_us);
  EXPECT_LE(a.p50_us, a.p99_us);
  EXPECT_GT(a.p50_us, a.ideal_us);
  EXPECT_GT(a.waiting_fraction, 0.0);
  o.seed = 6;
  EXPECT_NE(simulate_stragglers(f.simulator, f.workload, f.config, Engine::analytic, o).mean_us, a.mean_us);
}

using test::expect_error;

TEST(Stragglers, BadInputNamesIt) {
  Fixture f;
  std::vector<double> factors(16, 1.0);
  expect_error([&] { apply_slow("16:2x", f.topology, factors); }, "rank 16 is not in 0..15");
  expect_error([&] { apply_slow("node7:2x", f.topology, factors); }, "no rank or host 'node7'");
  expect_error([&] { apply_slow("3:-1x", f.topology, factors); }, "--slow 3: '-1' must be in [0.001, 1000]");
  // strtod once read "0x2" as 2: decimals only, and within a range that keeps the step finite.
  expect_error([&] { apply_slow("3:0x2x", f.topology, factors); }, "--slow 3: '0x2' is not a finite decimal number");
  expect_error([&] { apply_slow("3:1e308x", f.topology, factors); }, "must be in [0.001, 1000]");
  expect_error([] { parse_jitter("lognormal:100"); }, "--jitter lognormal: '100' must be in (0, 10]");
  expect_error([] { parse_jitter("normal: 0.1"); }, "is not a finite decimal number");
  expect_error([&] { apply_slow("3", f.topology, factors); }, "expected WHO:FACTORx");
  expect_error([] { parse_jitter("gamma:1"); }, "unknown distribution");
  expect_error([] { parse_jitter("uniform:1.5"); }, "half-width must be below 1");
  expect_error([] { parse_jitter("normal"); }, "give its parameter");
  StragglerOptions o;
  o.steps = 0;
  expect_error([&] { simulate_stragglers(f.simulator, f.workload, f.config, Engine::analytic, o); }, "--steps 0");
}

}  // namespace
