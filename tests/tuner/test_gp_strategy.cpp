// The Gaussian process, expected improvement and the three strategies on synthetic objectives.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "colltune/common/error.hpp"
#include "colltune/tuner/gp.hpp"
#include "colltune/tuner/strategy.hpp"

using namespace colltune;
using namespace colltune::tuner;

namespace {

// A smooth bowl over log fusion threshold and log cycle time with its minimum at 16 MiB, 2.154 ms,
// penalties for the categorical knobs, and one infeasible algorithm.
class Bowl : public Objective {
 public:
  std::string name() const override { return "bowl"; }
  double evaluate(const Candidate& c) override {
    ++calls;
    if (c.algorithm == "broken") return std::numeric_limits<double>::infinity();
    const double f = c.fusion_threshold_bytes == 0 ? 0.0 : std::log2(static_cast<double>(c.fusion_threshold_bytes));
    const double y = std::log10(c.cycle_time_us);
    double t = 100.0 + 3.0 * (f - 24) * (f - 24) + 40.0 * (y - 3.333) * (y - 3.333);
    if (!c.fp16) t += 15;
    if (c.algorithm == "tree") t += 25;
    if (c.hierarchical) t += 5;
    if (c.chunk_bytes) t += 2;
    return t;
  }
  int calls = 0;
};

SearchSpace bowl_space() { return SearchSpace::defaults({"ring", "tree", "broken"}); }

}  // namespace

TEST(GaussianProcess, InterpolatesAndIsUncertainAwayFromData) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i <= 10; ++i) {
    x.push_back({i / 10.0});
    y.push_back(std::sin(6.0 * i / 10.0));
  }
  GaussianProcess gp;
  gp.fit(x, y);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto p = gp.predict(x[i]);
    EXPECT_NEAR(p.mean, y[i], 0.05);
    EXPECT_LT(p.sd, 0.2);
  }
  EXPECT_NEAR(gp.predict({0.55}).mean, std::sin(3.3), 0.1);
  EXPECT_GT(gp.predict({3.0}).sd, gp.predict({0.5}).sd);
  EXPECT_TRUE(std::isfinite(gp.log_marginal_likelihood()));
}

TEST(GaussianProcess, RejectsBadInput) {
  GaussianProcess gp;
  EXPECT_THROW(gp.fit({}, {}), Error);
  EXPECT_THROW(gp.fit({{0.0}, {1.0, 2.0}}, {1.0, 2.0}), Error);
  EXPECT_THROW(gp.predict({0.0}), Error);
}

TEST(ExpectedImprovement, MatchesClosedForm) {
  EXPECT_DOUBLE_EQ(expected_improvement(5.0, 0.0, 3.0), 0.0);
  EXPECT_DOUBLE_EQ(expected_improvement(1.0, 0.0, 3.0), 2.0);
  // mean == best: EI = sd * phi(0)
  EXPECT_NEAR(expected_improvement(2.0, 1.0, 2.0), 1.0 / std::sqrt(2.0 * M_PI), 1e-12);
  EXPECT_GT(expected_improvement(2.0, 2.0, 2.0), expected_improvement(2.0, 1.0, 2.0));
}

TEST(Strategy, GridEvaluatesEverythingAndFindsTheMinimum) {
  Bowl bowl;
  const auto space = bowl_space();
  const auto history = search(StrategyKind::grid, space, bowl, {});
  EXPECT_EQ(history.size(), space.size());
  const auto& best = best_of(history);
  EXPECT_EQ(best.candidate.fusion_threshold_bytes, 16 * MiB);
  EXPECT_DOUBLE_EQ(best.candidate.cycle_time_us, 2154.0);  // 0.1 ms x 10^(4/3), 3 digits
  EXPECT_TRUE(best.candidate.fp16);
  EXPECT_EQ(best.candidate.chunk_bytes, 0u);
  EXPECT_FALSE(best.candidate.hierarchical);
}

TEST(Strategy, RandomIsReproducibleBySeedAndStartsWithTheInitialPoints) {
  const auto space = bowl_space();
  SearchOptions options;
  options.budget = 25;
  options.seed = 7;
  options.initial = {horovod_baseline()};
  Bowl a, b, c;
  const auto h1 = search(StrategyKind::random, space, a, options);
  const auto h2 = search(StrategyKind::random, space, b, options);
  ASSERT_EQ(h1.size(), 25u);
  EXPECT_EQ(h1.front().candidate, horovod_baseline());
  for (std::size_t i = 0; i < h1.size(); ++i) EXPECT_EQ(h1[i].candidate, h2[i].candidate);
  options.seed = 8;
  const auto h3 = search(StrategyKind::random, space, c, options);
  int same = 0;
  for (std::size_t i = 1; i < h1.size(); ++i) same += h1[i].candidate == h3[i].candidate;
  EXPECT_LT(same, 5);
}

TEST(Strategy, AcceptFilterRemovesCandidates) {
  Bowl bowl;
  SearchOptions options;
  options.accept = [](const Candidate& c) { return !c.fp16; };
  const auto history = search(StrategyKind::grid, bowl_space(), bowl, options);
  for (const auto& e : history) EXPECT_FALSE(e.candidate.fp16);
  options.accept = [](const Candidate&) { return false; };
  EXPECT_THROW(search(StrategyKind::grid, bowl_space(), bowl, options), Error);
}

TEST(Strategy, BayesFindsTheBowlWithinBudgetForSeveralSeeds) {
  const auto space = bowl_space();
  Bowl grid_bowl;
  const double optimum = best_of(search(StrategyKind::grid, space, grid_bowl, {})).step_time_us;
  for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    Bowl bowl;
    SearchOptions options;
    options.budget = 30;
    options.seed = seed;
    options.initial = {horovod_baseline()};
    const auto history = search(StrategyKind::bayes, space, bowl, options);
    EXPECT_EQ(history.size(), 30u);
    EXPECT_EQ(bowl.calls, 30);
    EXPECT_LE(best_of(history).step_time_us, optimum * 1.05) << "seed " << seed;
    std::map<std::string, int> seen;
    for (const auto& e : history) EXPECT_EQ(++seen[describe(e.candidate)], 1) << "re-evaluated a candidate";
  }
}

TEST(Strategy, ProgressReportsBestSoFar) {
  Bowl bowl;
  SearchOptions options;
  options.budget = 10;
  double last_best = std::numeric_limits<double>::infinity();
  std::size_t calls = 0;
  options.progress = [&](std::size_t done, std::size_t total, const Evaluation& best) {
    EXPECT_EQ(done, ++calls);
    EXPECT_EQ(total, 10u);
    EXPECT_LE(best.step_time_us, last_best);
    last_best = best.step_time_us;
  };
  search(StrategyKind::random, bowl_space(), bowl, options);
  EXPECT_EQ(calls, 10u);
}

TEST(Strategy, ParseNames) {
  EXPECT_EQ(parse_strategy("grid"), StrategyKind::grid);
  EXPECT_EQ(parse_strategy("bayes"), StrategyKind::bayes);
  EXPECT_EQ(parse_strategy("random"), StrategyKind::random);
  EXPECT_THROW(parse_strategy("annealing"), Error);
}
