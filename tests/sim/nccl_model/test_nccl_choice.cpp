// NCCL's pick (src/enqueue.cc, topoGetAlgoInfo): the cheapest cell of the cost table, then
// fewer channels for small messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/sim/nccl_model.hpp"

namespace {

using namespace colltune;
using namespace colltune::sim;

constexpr auto AR = NcclColl::allreduce;

std::string pick(const NcclModel& m, std::size_t bytes) {
  const NcclChoice c = m.choose(AR, bytes);
  return std::string(to_string(c.algo)) + "/" + std::string(to_string(c.proto));
}

// One DGX H100: LL for small messages, LL128 in between, then NVLS for large ones. NVIDIA
// states that allreduce uses NVLink SHARP (NVLS) by default there (nccl-tests issue 212);
// on one A100 node there is no NVLS and Ring/Simple carries the large sizes.
TEST(NcclChoice, OneNodeProtocolsSwitchWithSize) {
  const NcclModel h100(topo::load_topology("dgx-h100"), NcclOptions{});
  EXPECT_EQ(pick(h100, 1024), "ring/ll");
  EXPECT_EQ(pick(h100, std::size_t(1) << 30), "nvls/simple");
  const NcclModel a100(topo::load_topology("dgx-a100"), NcclOptions{});
  EXPECT_EQ(pick(a100, 1024), "ring/ll");
  EXPECT_EQ(pick(a100, std::size_t(16) << 20), "ring/ll128");
  EXPECT_EQ(pick(a100, std::size_t(1) << 30), "ring/simple");
  // The protocol only moves towards fatter protocols as the size grows.
  int last = 0;
  for (std::size_t b = 64; b <= (std::size_t(1) << 33); b *= 2) {
    const int p = index_of(a100.choose(AR, b).proto);
    EXPECT_GE(p, last) << b;
    last = p;
  }
}

// Two nodes: NCCL runs Tree (or NVLSTree on Hopper) "On two nodes" (nccl-tests issue 196,
// NCCL's maintainer); on many nodes Ring wins the largest sizes.
TEST(NcclChoice, AcrossNodesTreeThenRing) {
  NcclOptions amd;
  amd.cpu = NcclCpu::amd;
  const NcclModel two(topo::load_topology("dgx-a100:nodes=2"), amd);
  EXPECT_EQ(pick(two, 1024), "tree/ll");
  EXPECT_EQ(pick(two, std::size_t(1) << 20), "tree/ll128");
  const NcclModel h100x2(topo::load_topology("dgx-h100:nodes=2"), NcclOptions{});
  EXPECT_EQ(pick(h100x2, std::size_t(1) << 28), "nvls_tree/simple");
  const NcclModel h100x4(topo::load_topology("dgx-h100:nodes=4"), NcclOptions{});
  EXPECT_EQ(pick(h100x4, std::size_t(8) << 30), "ring/simple");
}

// Channels: while bytes < channels x threads x per-thread threshold NCCL drops a channel.
// Ring/LL on 8 ranks: 512 threads x 8 B x 8 ranks = 32 KiB per channel.
TEST(NcclChoice, SmallMessagesUseFewerChannels) {
  const NcclModel m(topo::load_topology("dgx-h100"), NcclOptions{});
  EXPECT_EQ(m.system().comm_channels, 24);
  EXPECT_EQ(m.channels_for(NcclAlgo::ring, NcclProto::ll, 1024), 1);
  EXPECT_EQ(m.channels_for(NcclAlgo::ring, NcclProto::ll, 32768 * 5), 5);
  EXPECT_EQ(m.channels_for(NcclAlgo::ring, NcclProto::ll, 32768 * 5 - 1), 4);
  EXPECT_EQ(m.channels_for(NcclAlgo::ring, NcclProto::simple, std::size_t(1) << 30), 24);
  // Ring/Simple: 512 threads x 64 B = 32 KiB per channel too.
  EXPECT_EQ(m.channels_for(NcclAlgo::ring, NcclProto::simple, 3 * 32768), 3);
  // NVLS always runs on its own channel count.
  EXPECT_EQ(m.channels_for(NcclAlgo::nvls, NcclProto::simple, 1024), 16);
  EXPECT_EQ(m.choose(AR, 1024).channels, 1);
}

TEST(NcclChoice, ForcedAlgorithmsAndCollectives) {
  const topo::Topology t = topo::load_topology("dgx-h100");
  NcclOptions o;
  o.algo_env = "Ring";
  o.proto_env = "Simple";
  const NcclModel forced(t, o);
  const NcclChoice c = forced.choose(AR, 1024);
  EXPECT_EQ(c.algo, NcclAlgo::ring);
  EXPECT_EQ(c.proto, NcclProto::simple);
  EXPECT_DOUBLE_EQ(c.time_us, forced.time_us(NcclAlgo::ring, NcclProto::simple, AR, 1024));
  const NcclModel m(t, NcclOptions{});
  EXPECT_EQ(m.choose(NcclColl::broadcast, 1 << 20).algo, NcclAlgo::ring);
  EXPECT_EQ(m.choose(NcclColl::reduce, 1 << 20).algo, NcclAlgo::ring);
  const NcclChoice ag = m.choose(NcclColl::allgather, std::size_t(1) << 30);
  EXPECT_TRUE(ag.algo == NcclAlgo::ring || ag.algo == NcclAlgo::nvls);
}

// The model is deterministic and cheap to ask: a sweep of sizes gives times that grow with
// size for each fixed cell.
TEST(NcclChoice, TimesGrowWithSize) {
  const NcclModel m(topo::load_topology("dgx-h100:nodes=4"), NcclOptions{});
  for (NcclAlgo a : {NcclAlgo::ring, NcclAlgo::tree, NcclAlgo::nvls_tree}) {
    double last = 0;
    for (std::size_t b = 1024; b <= (std::size_t(1) << 32); b *= 4) {
      const double t = m.time_us(a, NcclProto::simple, AR, b);
      EXPECT_GT(t, last) << to_string(a) << " " << b;
      last = t;
    }
  }
}

// Why an algorithm is off the table, in NCCL's terms; and what NCCL_ALGO / NCCL_PROTO leave on.
TEST(NcclChoice, UnavailableSaysWhy) {
  const NcclModel a100(topo::load_topology("dgx-a100"), NcclOptions{});
  EXPECT_FALSE(a100.system().switch_reduces);
  ASSERT_TRUE(a100.unavailable(AR, NcclAlgo::nvls));
  EXPECT_NE(a100.unavailable(AR, NcclAlgo::nvls)->find("does not reduce in the switch"), std::string::npos);
  EXPECT_FALSE(a100.unavailable(AR, NcclAlgo::ring));
  EXPECT_FALSE(a100.unavailable(AR, NcclAlgo::tree));
  EXPECT_NE(a100.unavailable(AR, NcclAlgo::collnet_direct)->find("CollNet is off"), std::string::npos);
  EXPECT_NE(a100.unavailable(AR, NcclAlgo::pat)->find("allgather and reduce-scatter only"), std::string::npos);

  const NcclModel h100(topo::load_topology("dgx-h100"), NcclOptions{});
  EXPECT_TRUE(h100.system().switch_reduces);
  EXPECT_FALSE(h100.unavailable(AR, NcclAlgo::nvls));
  EXPECT_NE(h100.unavailable(AR, NcclAlgo::nvls_tree)->find("more than one node"), std::string::npos);
  const NcclModel h100x2(topo::load_topology("dgx-h100:nodes=2"), NcclOptions{});
  EXPECT_FALSE(h100x2.unavailable(AR, NcclAlgo::nvls_tree));
  EXPECT_NE(h100x2.unavailable(AR, NcclAlgo::nvls)->find("needs CollNet"), std::string::npos);
  NcclOptions collnet;
  collnet.collnet = true;
  const NcclModel no_sharp(topo::load_topology("dgx-h100:nodes=2"), collnet);
  EXPECT_NE(no_sharp.unavailable(AR, NcclAlgo::collnet_chain)->find("no network switch reduces"), std::string::npos);
  const NcclModel sharp(topo::load_topology("fat-tree:nodes=2,sharp=1"), collnet);
  EXPECT_FALSE(sharp.unavailable(AR, NcclAlgo::collnet_chain));
  // unavailable() agrees with NCCL's table: what it calls off has no bandwidth for any
  // protocol, and what it leaves on has some.
  for (const NcclModel* m : {&a100, &h100, &h100x2, &no_sharp, &sharp})
    for (NcclAlgo a : kNcclAlgos) {
      float best = 0;
      for (NcclProto p : kNcclProtos) best = std::max(best, m->bandwidth(AR, a, p));
      EXPECT_EQ(best > 0, !m->unavailable(AR, a)) << m->system().nranks << " ranks, " << to_string(a);
    }

  NcclOptions env;
  env.algo_env = "^NVLS,Tree";
  env.proto_env = "allreduce:LL128;broadcast:LL";
  const NcclModel limited(topo::load_topology("dgx-h100"), env);
  EXPECT_FALSE(limited.env_allows(AR, NcclAlgo::nvls));
  EXPECT_FALSE(limited.env_allows(AR, NcclAlgo::tree));
  EXPECT_TRUE(limited.env_allows(AR, NcclAlgo::ring));
  EXPECT_TRUE(limited.env_allows(AR, NcclProto::ll128));
  EXPECT_FALSE(limited.env_allows(AR, NcclProto::ll));
  EXPECT_TRUE(limited.env_allows(NcclColl::broadcast, NcclProto::ll));
  EXPECT_FALSE(limited.env_allows(NcclColl::broadcast, NcclProto::simple));
  EXPECT_TRUE(h100.env_allows(AR, NcclProto::ll128));  // LL128's automatic default counts as on
}

// NCCL's channel settings (connect.cc, transport/nvls.cc): NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS keep
// the first comm channels, NCCL_MIN_NCHANNELS / NCCL_MIN_CTAS copy them up, the CTAs bound the
// NVLS channels too; NCCL's time model keeps the search's channels.
NcclModel with_env(const topo::Topology& t, std::initializer_list<const char*> settings) {
  NcclOptions o;
  for (const char* s : settings) set_nccl_channel_setting(o.channel_env, s);
  return NcclModel(t, o);
}

TEST(NcclChannels, TheEnvironmentBoundsTheChannelsAsNcclDoes) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const NcclModel plain(t, NcclOptions{});
  const int search = plain.channels(NcclAlgo::ring).channels;
  ASSERT_GT(search, 4);
  EXPECT_EQ(plain.system().comm_channels, 2 * search);  // duplicated once
  EXPECT_EQ(plain.system().nvls_channels, 16);          // NVLS_NCHANNELS_SM90
  EXPECT_EQ(plain.comm_orders(NcclAlgo::ring), plain.channels(NcclAlgo::ring).orders);

  const NcclModel four = with_env(t, {"NCCL_MAX_NCHANNELS=4"});
  EXPECT_EQ(four.system().comm_channels, 4);
  EXPECT_EQ(four.system().nvls_channels, 16);  // NCHANNELS leaves NVLS alone
  const auto& orders = plain.channels(NcclAlgo::ring).orders;
  EXPECT_EQ(four.comm_orders(NcclAlgo::ring), std::vector<std::vector<int>>(orders.begin(), orders.begin() + 4));

  const NcclModel ctas = with_env(t, {"NCCL_MIN_CTAS=24"});
  EXPECT_EQ(ctas.system().comm_channels, 24);
  EXPECT_EQ(ctas.system().nvls_channels, 24);
  EXPECT_EQ(ctas.comm_orders(NcclAlgo::ring), orders);  // every search channel runs three times
  EXPECT_EQ(ctas.choose(AR, std::size_t{1} << 33).channels, 24);

  // 20 from 16: channels 16..19 copy 0..3, which then run three times and the others twice.
  const NcclModel twenty = with_env(t, {"NCCL_MIN_NCHANNELS=20"});
  ASSERT_EQ(twenty.system().comm_channels, 20);
  const auto uneven = twenty.comm_orders(NcclAlgo::ring);
  ASSERT_EQ(uneven.size(), 20U);
  EXPECT_EQ(uneven[16], orders[0]);
  EXPECT_EQ(uneven[19], orders[3]);

  // A minimum of CTAs above the maximum becomes the maximum (init.cc).
  const NcclModel clamped = with_env(t, {"NCCL_MIN_CTAS=24", "NCCL_MAX_CTAS=8"});
  EXPECT_EQ(clamped.system().comm_channels, 8);
  EXPECT_EQ(clamped.system().nvls_channels, 8);

  // NCCL's own time is the search's: unchanged.
  for (const NcclModel* m : {&four, &ctas, &twenty, &clamped})
    EXPECT_EQ(m->time_us(NcclAlgo::ring, NcclProto::simple, AR, std::size_t{1} << 30),
              plain.time_us(NcclAlgo::ring, NcclProto::simple, AR, std::size_t{1} << 30));
}

TEST(NcclChannels, SettingsAreReadAsNcclNamesThem) {
  NcclChannelEnv env;
  set_nccl_channel_setting(env, "NCCL_MIN_NRINGS=2");  // legacy name
  set_nccl_channel_setting(env, "NCCL_MAX_CTAS=8");
  EXPECT_EQ(env, (NcclChannelEnv{.min_nchannels = 2, .max_ctas = 8}));
  EXPECT_EQ(to_string(env), "NCCL_MIN_NCHANNELS=2, NCCL_MAX_CTAS=8");
  EXPECT_EQ(to_string(NcclChannelEnv{}), "");
  for (const char* bad : {"NCCL_IB_QPS_PER_CONNECTION=2", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS=0", "NCCL_MAX_CTAS=x",
                          "NCCL_MIN_NCHANNELS=2000"})
    EXPECT_THROW(set_nccl_channel_setting(env, bad), Error) << bad;
}

}  // namespace
