// The exported interfaces as NCCL's loader finds them, the v2 interface (no cost table), and
// null arguments on every entry point.
#include "plugin_fixture.hpp"

namespace colltune::nccl_plugin::test {
namespace {

using abi::kAllGather;
using abi::kAllReduce;

TEST(PluginAbi, EveryVersionNcclLooksUpIsExported) {
  ASSERT_TRUE(plugin().loaded()) << dlerror();
  const auto* v6 = plugin().symbol<abi::TunerV6>("ncclTunerPlugin_v6");
  const auto* v5 = plugin().symbol<abi::TunerV5>("ncclTunerPlugin_v5");
  const auto* v4 = plugin().symbol<abi::TunerV4>("ncclTunerPlugin_v4");
  const auto* v3 = plugin().symbol<abi::TunerV3>("ncclTunerPlugin_v3");
  const auto* v2 = plugin().symbol<abi::TunerV2>("ncclTunerPlugin_v2");
  ASSERT_TRUE(v6 && v5 && v4 && v3 && v2);
  for (const char* name : {v6->name, v5->name, v4->name, v3->name, v2->name}) EXPECT_STREQ(name, "colltune");
  EXPECT_TRUE(v6->init && v6->get_coll_info && v6->finalize);
  EXPECT_EQ(v6->get_chunk_size, nullptr) << "optional: NULL keeps NCCL's chunk size";
  EXPECT_TRUE(v5->init && v5->get_coll_info && v5->finalize);
  EXPECT_TRUE(v4->init && v4->get_coll_info && v4->destroy);
  EXPECT_TRUE(v3->init && v3->get_coll_info && v3->destroy);
  EXPECT_TRUE(v2->init && v2->get_coll_info && v2->destroy);
  // Versions NCCL does not have (v1 is 2.19/2.20's, not offered). That nothing else is exported
  // is checked on the symbol table (ctest nccl_plugin.exports).
  EXPECT_EQ(plugin().symbol<void>("ncclTunerPlugin_v1"), nullptr);
  EXPECT_EQ(plugin().symbol<void>("ncclTunerPlugin_v7"), nullptr);
}

TEST(PluginAbi, NullArgumentsAreHarmless) {
  ASSERT_TRUE(plugin().loaded()) << dlerror();
  TableEnv env;
  const auto* v5 = plugin().symbol<abi::TunerV5>("ncclTunerPlugin_v5");
  const auto* v4 = plugin().symbol<abi::TunerV4>("ncclTunerPlugin_v4");
  const auto* v2 = plugin().symbol<abi::TunerV2>("ncclTunerPlugin_v2");
  EXPECT_EQ(v5->init(nullptr, 0, 16, 2, nullptr, nullptr, nullptr), abi::kSuccess);
  EXPECT_EQ(v4->init(16, 2, nullptr, nullptr), abi::kSuccess);
  Costs costs;
  int channels = 0, algorithm = -1, protocol = -1;
  EXPECT_EQ(v5->get_coll_info(nullptr, kAllReduce, 100, 1, costs.as_nccl(), 7, 3, 0, &channels), abi::kSuccess);
  EXPECT_EQ(v2->get_coll_info(nullptr, kAllReduce, 100, 0, 0, 1, &algorithm, &protocol, &channels), abi::kSuccess);
  EXPECT_TRUE(costs == Costs{});
  EXPECT_EQ(channels, 0);
  EXPECT_EQ(v5->finalize(nullptr), abi::kSuccess);
  EXPECT_EQ(v2->destroy(nullptr), abi::kSuccess);
  // A loaded context with a null table or nChannels pointer.
  ScratchDir dir;
  env.set("NCCL_TUNER_CONFIG_FILE", dir.write("t.conf", "allreduce,0,1000,ring,simple,4,-1,-1\n"));
  void* ctx = nullptr;
  ASSERT_EQ(v5->init(&ctx, 0, 16, 2, nullptr, nullptr, nullptr), abi::kSuccess);
  EXPECT_EQ(v5->get_coll_info(ctx, kAllReduce, 100, 1, nullptr, 7, 3, 0, &channels), abi::kSuccess);
  EXPECT_EQ(channels, 0);
  EXPECT_EQ(v5->get_coll_info(ctx, kAllReduce, 100, 1, costs.as_nccl(), 7, 3, 0, nullptr), abi::kSuccess);
  EXPECT_TRUE(costs == preferred(abi::kRing, abi::kSimple));
  EXPECT_EQ(v5->finalize(ctx), abi::kSuccess);
}

// ---- v2: NCCL 2.21 uses the named algorithm and protocol unchecked ---------------------------

class PluginV2 : public ::testing::Test {
 protected:
  struct Named {
    int algorithm = abi::kUndefined;
    int protocol = abi::kUndefined;
    int channels = 0;
  };
  void SetUp() override {
    ASSERT_TRUE(plugin().loaded()) << dlerror();
    captured_log().clear();
    env_.set("NCCL_TUNER_CONFIG_FILE", dir_.write("nccl_tuner.conf",
                                                  "allreduce,0,1000,ring,simple,-1,2,16\n"
                                                  "allreduce,1001,2000,tree,ll,3,2,16\n"
                                                  "allreduce,2001,3000,ring,ll128,-1,2,16\n"
                                                  "allreduce,3001,4000,nvls,simple,-1,2,16\n"
                                                  "allreduce,4001,5000,ring,-1,-1,2,16\n"
                                                  "allreduce,5001,6000,-1,-1,5,2,16\n"
                                                  "allreduce,6001,7000,ring,simple,-1,2,16,-1,1\n"
                                                  "allgather,0,1000,tree,simple,-1,2,16\n"
                                                  "allgather,1001,2000,ring,ll,-1,2,16\n"));
    ASSERT_EQ(v2_->init(16, 2, capture_log, &ctx_), abi::kSuccess);
  }
  void TearDown() override { v2_->destroy(ctx_); }

  // As NCCL 2.21 calls it: algorithm and protocol preset to -1, nChannels to 0.
  Named ask(int coll, std::size_t bytes) const {
    Named n;
    EXPECT_EQ(v2_->get_coll_info(ctx_, coll, bytes, /*collNet=*/1, /*nvls=*/1, 1, &n.algorithm, &n.protocol,
                                 &n.channels),
              abi::kSuccess);
    return n;
  }
  static void expect(const Named& n, int algorithm, int protocol, int channels) {
    EXPECT_EQ(n.algorithm, algorithm);
    EXPECT_EQ(n.protocol, protocol);
    EXPECT_EQ(n.channels, channels);
  }

  TableEnv env_;
  ScratchDir dir_;
  const abi::TunerV2* v2_ = plugin().symbol<abi::TunerV2>("ncclTunerPlugin_v2");
  void* ctx_ = nullptr;
};

TEST_F(PluginV2, RingOrAllreduceTreeWithLLOrSimpleIsNamed) {
  expect(ask(kAllReduce, 1000), abi::kRing, abi::kSimple, 0);
  expect(ask(kAllReduce, 1001), abi::kTree, abi::kLL, 3);
  expect(ask(kAllGather, 1500), abi::kRing, abi::kLL, 0);
}

TEST_F(PluginV2, WhatNcclMightNotHaveIsLeftToNccl) {
  // Without a cost table LL128, NVLS, a protocol wildcard, tree outside allreduce and a regBuff
  // condition cannot be checked against what NCCL enabled: nothing is named.
  for (auto [coll, bytes] : {std::pair{kAllReduce, 2500}, {kAllReduce, 3500}, {kAllReduce, 4500},
                             {kAllGather, 500}, {kAllReduce, 6500}, {kAllReduce, 9000}})
    expect(ask(coll, static_cast<std::size_t>(bytes)), abi::kUndefined, abi::kUndefined, 0);
}

TEST_F(PluginV2, AChannelsOnlyRowSetsOnlyChannels) { expect(ask(kAllReduce, 5500), abi::kUndefined, abi::kUndefined, 5); }

}  // namespace
}  // namespace colltune::nccl_plugin::test
