#pragma once
// A test fixture per exported cost-table interface (v3 to v6): write a table, init the plugin on
// it for a communicator shape, ask about collectives, and compare what came back with what NCCL
// passed in.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin_harness.hpp"

namespace colltune::nccl_plugin::test {

// What one getCollInfo call left behind.
struct Outcome {
  Costs costs;
  int channels = 0;
};

// The cost table with one cell made preferred: `cell[a][p]` = 0, everything else as NCCL had it.
inline Costs preferred(int a, int p, Costs base = {}) {
  base.cell[a][p] = 0.0f;
  return base;
}

class PluginTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugin().loaded()) << dlerror();
    captured_log().clear();
  }
  void TearDown() override {
    for (void* ctx : contexts_) tuner_.finalize(ctx);
  }

  // Writes `csv` as the table, points NCCL_TUNER_CONFIG_FILE at it and inits a communicator.
  void* load(const std::string& csv, std::size_t n_ranks = 16, std::size_t n_nodes = 2) {
    env_.set("NCCL_TUNER_CONFIG_FILE", dir_.write("nccl_tuner.conf", csv));
    return init(n_ranks, n_nodes);
  }
  void* init(std::size_t n_ranks = 16, std::size_t n_nodes = 2, abi::Logger log = capture_log) {
    void* ctx = tuner_.init(n_ranks, n_nodes, log);
    contexts_.push_back(ctx);
    return ctx;
  }

  // One collective as NCCL asks: a fresh cost table, nChannels preset to `channels_in` (NCCL
  // passes 0; a sentinel shows that an untouched value really was untouched).
  Outcome ask(void* ctx, int coll, std::size_t bytes, int pipe_ops = 1, int reg_buff = 0, Costs costs = {},
              int channels_in = 0) const {
    Outcome out{costs, channels_in};
    EXPECT_EQ(tuner_.call(ctx, coll, bytes, out.costs, &out.channels, pipe_ops, reg_buff), abi::kSuccess);
    return out;
  }
  Outcome ask_allreduce(void* ctx, std::size_t bytes) const { return ask(ctx, abi::kAllReduce, bytes); }

  static void expect_untouched(const Outcome& o, const Costs& in = {}, int channels_in = 0) {
    EXPECT_TRUE(o.costs == in) << "cost table changed";
    EXPECT_EQ(o.channels, channels_in) << "nChannels changed";
  }
  static void expect_chosen(const Outcome& o, int a, int p, const Costs& in = {}) {
    EXPECT_TRUE(o.costs == preferred(a, p, in)) << "expected only cell [" << a << "][" << p << "] set to 0";
    EXPECT_EQ(o.costs.nccl_pick(), std::make_pair(a, p)) << "NCCL would not pick the row's choice";
  }

  TableEnv env_;
  ScratchDir dir_;
  TableTuner tuner_{GetParam()};

 private:
  std::vector<void*> contexts_;
};

inline std::string version_name(const ::testing::TestParamInfo<int>& info) {
  std::string name(1, 'v');  // appended, not "v" + ...: g++ 12 warns falsely (-Wrestrict) on that
  return name += std::to_string(info.param);
}

}  // namespace colltune::nccl_plugin::test
