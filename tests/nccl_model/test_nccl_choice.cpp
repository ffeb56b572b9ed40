// NCCL's pick (src/enqueue.cc, topoGetAlgoInfo): the cheapest cell of the cost table, then
// fewer channels for small messages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
