// The search space: defaults, --fix parsing, enumeration, the step-config mapping.
#include <gtest/gtest.h>

#include <set>

#include "colltune/common/error.hpp"
#include "colltune/tuner/space.hpp"
#include "colltune/tuner/tuner.hpp"

using namespace colltune;
using namespace colltune::tuner;

TEST(SearchSpace, DefaultsAreLogSpacedAndIncludeTheBaseline) {
  const auto s = SearchSpace::defaults({"ring", "tree"});
  EXPECT_EQ(s.fusion_thresholds.front(), 0u);
  EXPECT_EQ(s.fusion_thresholds.back(), 256 * MiB);
  for (std::size_t i = 2; i < s.fusion_thresholds.size(); ++i)
    EXPECT_EQ(s.fusion_thresholds[i], 2 * s.fusion_thresholds[i - 1]);
  EXPECT_DOUBLE_EQ(s.cycle_times_us.front(), 100.0);
  EXPECT_DOUBLE_EQ(s.cycle_times_us.back(), 100000.0);
  EXPECT_TRUE(s.contains(horovod_baseline()));
  EXPECT_EQ(s.algorithms.front(), "auto");
}

TEST(SearchSpace, HierarchicalCombinesOnlyWithItsAlgorithms) {
  const auto s = SearchSpace::defaults({"ring", "rhd"});
  const auto all = s.enumerate();
  // 10 thresholds x 10 cycles x 2 fp16 x 2 chunks x (auto + 2 flat x 2 hierarchical)
  EXPECT_EQ(all.size(), 10u * 10u * 2u * 2u * 5u);
  for (const auto& c : all) EXPECT_FALSE(c.algorithm == "auto" && c.hierarchical);
  auto with_auto = s;
  with_auto.hierarchical_algorithms.push_back("auto");  // colltune's executors: per-host per buffer
  EXPECT_EQ(with_auto.size(), 10u * 10u * 2u * 2u * 6u);
  std::set<std::string> seen;
  for (const auto& c : all) seen.insert(describe(c));
  EXPECT_EQ(seen.size(), all.size());
}

TEST(SearchSpace, RegistryGivesTheFullGridOfAtLeast2000) {
  const auto t = topo::load_topology("dgx-h100:nodes=2");
  EXPECT_GE(make_space(RuntimeModel(t, coll::Runtime::colltune), {}).size(), 2000u);
  for (const auto& a : RuntimeModel(t, coll::Runtime::colltune).flat_algorithms())
    EXPECT_EQ(coll::find_algorithm(a).placement, coll::Placement::flat) << a;
}

TEST(SearchSpace, FixPinsOneKnob) {
  auto s = SearchSpace::defaults({"ring", "tree"});
  s.fix("cycle-time=5ms");
  s.fix("fusion_threshold=64MiB");
  s.fix("fp16=off");
  s.fix("algo=tree");
  s.fix("chunk=256KiB");
  s.fix("hierarchical=on");
  EXPECT_TRUE(s.is_fixed("cycle-time"));
  EXPECT_TRUE(s.is_fixed("algorithm"));
  const auto all = s.enumerate();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], (Candidate{64 * MiB, 5000.0, false, "tree", 256 * KiB, true}));
}

TEST(SearchSpace, BadFixIsAnErrorNamingTheKnob) {
  auto s = SearchSpace::defaults({"ring"});
  auto expect_error = [&](const char* text, const char* needle) {
    try {
      s.fix(text);
      FAIL() << text << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("warp=9", "warp");
  expect_error("cycle-time", "knob=value");
  expect_error("cycle-time=fast", "cycle-time");
  expect_error("cycle-time=0ms", "positive");
  expect_error("fp16=maybe", "on or off");
  expect_error("algorithm=quantum", "quantum");
  expect_error("fusion-threshold=-1MiB", "fusion-threshold");
  // auto + hierarchical=on leaves nothing to search.
  auto t = SearchSpace::defaults({"ring"});
  t.fix("algorithm=auto");
  EXPECT_THROW(t.fix("hierarchical=on"), Error);
}

TEST(SearchSpace, StepConfigMapping) {
  Candidate c{32 * MiB, 2500.0, true, "rhd", 1 * MiB, true};
  auto config = to_step_config(c);
  EXPECT_TRUE(config.auto_per_host);
  EXPECT_EQ(config.algorithm, "hierarchical");
  EXPECT_EQ(config.options.inner, "rhd");
  EXPECT_EQ(config.options.chunk_elems, MiB / 2);  // fp16 elements
  EXPECT_TRUE(config.fp16_compress);
  EXPECT_EQ(config.fusion_threshold_bytes, 32 * MiB);
  EXPECT_DOUBLE_EQ(config.cycle_time_us, 2500.0);
  c.hierarchical = false;
  c.fp16 = false;
  config = to_step_config(c);
  EXPECT_EQ(config.algorithm, "rhd");
  EXPECT_FALSE(config.auto_per_host);
  EXPECT_EQ(config.options.chunk_elems, MiB / 4);
  const auto base = to_step_config(horovod_baseline());
  EXPECT_EQ(base.fusion_threshold_bytes, 128 * MiB);
  EXPECT_DOUBLE_EQ(base.cycle_time_us, 1000.0);
  EXPECT_FALSE(base.fp16_compress);
  EXPECT_EQ(base.algorithm, "ring");
}
