// The measured objective under mpirun: the fusion runtime replaying a tiny workload over MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include "colltune/sim/workload.hpp"
#include "colltune/tuner/measured.hpp"
#include "colltune/tuner/strategy.hpp"
#include "mpi_test_main.hpp"

using namespace colltune;
using namespace colltune::tuner;

namespace {

const sim::Workload& tiny() {
  static const sim::Workload w = sim::load_workload(TUNER_TEST_DATA "/tiny_workload.json");
  return w;
}

double max_over_ranks(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

}  // namespace

TEST(MeasuredObjective, StepTakesAtLeastTheComputeAndAllRanksAgree) {
  MeasuredOptions options;
  options.iterations = 2;
  auto objective = make_measured_objective(tiny(), options);
  EXPECT_EQ(objective->name(), "measured");
  for (const Candidate& c : {horovod_baseline(), Candidate{0, 500.0, true, "ring", 0, false},
                             Candidate{1 * MiB, 200.0, false, "rhd", 64 * KiB, false}}) {
    const double t = objective->evaluate(c);
    EXPECT_GE(t, tiny().forward_us + tiny().backward_us) << describe(c);
    EXPECT_LT(t, 10.0 * (tiny().forward_us + tiny().backward_us) + 1e6) << describe(c);
    EXPECT_EQ(max_over_ranks(t), t) << "ranks disagree on " << describe(c);
  }
}

TEST(MeasuredObjective, LongCycleDelaysTheStep) {
  MeasuredOptions options;
  options.iterations = 1;
  auto objective = make_measured_objective(tiny(), options);
  // With a 20 ms cycle the first negotiation happens after the 4 ms backward pass has ended.
  const double slow = objective->evaluate(Candidate{64 * MiB, 20000.0, false, "ring", 0, false});
  EXPECT_GE(slow, tiny().forward_us + 20000.0);
}

TEST(MeasuredObjective, BayesIsDeterministicAcrossRanks) {
  MeasuredOptions options;
  options.iterations = 1;
  options.warmup = 0;
  auto objective = make_measured_objective(tiny(), options);
  SearchSpace space = SearchSpace::defaults({"ring", "rhd"});
  space.fix("chunk=0");
  SearchOptions search_options;
  search_options.budget = 6;
  search_options.seed = 9;
  search_options.initial = {horovod_baseline()};
  const auto history = search(StrategyKind::bayes, space, *objective, search_options);
  ASSERT_EQ(history.size(), 6u);
  EXPECT_EQ(history.front().candidate, horovod_baseline());
  // Every rank walked the same sequence: compare a digest of the candidates.
  double digest = 0;
  for (const auto& e : history) digest = digest * 1.000001 + e.candidate.cycle_time_us + static_cast<double>(e.candidate.fusion_threshold_bytes % 9973);
  EXPECT_EQ(max_over_ranks(digest), digest);
  EXPECT_TRUE(best_of(history).feasible());
}

COLLTUNE_MPI_TEST_MAIN
