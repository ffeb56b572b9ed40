// The event simulator's machine model on hand-written schedules: latency + bytes/bandwidth,
// rendezvous, max-min fair sharing with re-rating when flows end, reductions, link accounting,
// traces and bad schedules.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

using coll::Block;
using coll::Op;
using coll::OpKind;
using coll::Schedule;

Schedule blank(int p) {
  Schedule s;
  s.algorithm = "test";
  s.nranks = p;
  s.count = 1 << 20;
  s.ranks.resize(static_cast<std::size_t>(p));
  return s;
}
void step(Schedule& s, int rank, std::vector<Op> ops) { s.ranks[static_cast<std::size_t>(rank)].push_back({std::move(ops)}); }
Op send(int peer, std::size_t count) { return {OpKind::send, peer, Block{0, count}}; }
Op copy(int peer, std::size_t count) { return {OpKind::recv_copy, peer, Block{0, count}}; }
Op reduce(int peer, std::size_t count) { return {OpKind::recv_reduce, peer, Block{0, count}}; }

// alpha 5 us, 12.5 GB/s = 12500 B/us, reduce 50 GB/s = 50000 B/us.
topo::Topology flat(int p) { return topo::load_topology("flat:ranks=" + std::to_string(p) + ",alpha=5,bw=12.5,reduce=50"); }

// The model's rules hold in both engines: the fast one (the default) and the reference.
class EventSimModel : public ::testing::TestWithParam<EventEngine> {
 protected:
  EventSimResult sim(const Schedule& s, const topo::Topology& t) const {
    EventSimOptions options;
    options.engine = GetParam();
    return simulate_schedule(coll::StoredSteps(s), t, options);
  }
};
INSTANTIATE_TEST_SUITE_P(Engines, EventSimModel, ::testing::Values(EventEngine::fast, EventEngine::reference),
                         [](const ::testing::TestParamInfo<EventEngine>& engine) {
                           return engine.param == EventEngine::fast ? "fast" : "reference";
                         });

TEST_P(EventSimModel, OneTransferIsLatencyPlusBytesOverBandwidthPlusReduction) {
  Schedule s = blank(2);
  step(s, 0, {send(1, 1000)});
  step(s, 1, {reduce(0, 1000)});
  const EventSimResult r = sim(s, flat(2));
  EXPECT_NEAR(r.rank_finish_us[0], 5 + 4000.0 / 12500, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[1], 5 + 4000.0 / 12500 + 4000.0 / 50000, 1e-9);
  EXPECT_DOUBLE_EQ(r.time_us, r.rank_finish_us[1]);
  ASSERT_EQ(r.links.size(), 2u);  // rank0 -> crossbar -> rank1
  for (const LinkUsage& l : r.links) {
    EXPECT_DOUBLE_EQ(l.bytes, 4000);
    EXPECT_NEAR(l.busy_us, 4000.0 / 12500, 1e-9);
  }
  EXPECT_EQ(r.flows, 1u);
  EXPECT_GE(r.events, 3u);
}

// A late rank: rank 1 starts at 100 us, so rank 0's send waits for it (rendezvous) and rank 2,
// which needs rank 1's block in its next step, waits in turn; hand-computed from the model.
TEST_P(EventSimModel, ALateRankDelaysExactlyTheTransfersThatNeedIt) {
  Schedule s = blank(3);
  step(s, 0, {send(1, 3125)});
  step(s, 1, {copy(0, 3125)});
  step(s, 1, {send(2, 3125)});
  step(s, 2, {copy(1, 3125)});
  EventSimOptions options;
  options.engine = GetParam();
  options.rank_start_us = {0, 100, 0};
  const EventSimResult r = simulate_schedule(coll::StoredSteps(s), flat(3), options);
  const double one = 5 + 12500.0 / 12500;  // a 12,500-byte transfer
  EXPECT_NEAR(r.rank_finish_us[0], 100 + one, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[1], 100 + 2 * one, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[2], 100 + 2 * one, 1e-9);
  // Everyone late by the same amount: the same run, shifted.
  options.rank_start_us = {0, 0, 0};
  const EventSimResult on_time = simulate_schedule(coll::StoredSteps(s), flat(3), options);
  options.rank_start_us = {40, 40, 40};
  const EventSimResult shifted = simulate_schedule(coll::StoredSteps(s), flat(3), options);
  for (std::size_t r2 = 0; r2 < 3; ++r2)
    EXPECT_NEAR(shifted.rank_finish_us[r2], on_time.rank_finish_us[r2] + 40, 1e-9);
}

TEST_P(EventSimModel, StartTimesAreCheckedAgainstTheRanks) {
  Schedule s = blank(2);
  step(s, 0, {send(1, 10)});
  step(s, 1, {copy(0, 10)});
  EventSimOptions options;
  options.engine = GetParam();
  options.rank_start_us = {0};
  EXPECT_THROW(simulate_schedule(coll::StoredSteps(s), flat(2), options), Error);
  options.rank_start_us = {0, -1};
  EXPECT_THROW(simulate_schedule(coll::StoredSteps(s), flat(2), options), Error);
}

TEST_P(EventSimModel, TransferWaitsForTheReceiversStep) {
  // Rank 1 receives from 2 first; the send 0->1 pairs with its second step (rendezvous).
  Schedule s = blank(3);
  step(s, 0, {send(1, 3125)});
  step(s, 2, {send(1, 3125)});
  step(s, 1, {copy(2, 3125)});
  step(s, 1, {copy(0, 3125)});
  const EventSimResult r = sim(s, flat(3));
  const double one = 5 + 12500.0 / 12500;
  EXPECT_NEAR(r.rank_finish_us[2], one, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[0], 2 * one, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[1], 2 * one, 1e-9);
}

TEST_P(EventSimModel, SharedLinkSplitsThenFreesBandwidth) {
  // 0->2 (12500 B) and 1->2 (25000 B) share rank 2's 12500 B/us downlink: at half rate each,
  // the first ends at 2 us; the second then has 12500 B left at the full rate: 3 us.
  Schedule s = blank(3);
  step(s, 0, {send(2, 3125)});
  step(s, 1, {send(2, 6250)});
  step(s, 2, {copy(0, 3125), copy(1, 6250)});
  const EventSimResult r = sim(s, flat(3));
  EXPECT_NEAR(r.rank_finish_us[0], 5 + 2.0, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[1], 5 + 3.0, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[2], 5 + 3.0, 1e-9);
}

// r0..r3 around one switch, no latency. Up links 10 GB/s; down links: r2 2 GB/s, r3 30 GB/s.
topo::Topology star() {
  topo::Topology t;
  t.name = "star";
  const int h = t.add_host("h0");
  const topo::VertexId sw = t.add_device({"switch", topo::DeviceKind::net_switch, -1, 0});
  const double down[] = {10, 10, 2, 30};
  for (int r = 0; r < 4; ++r) {
    const topo::VertexId v = t.add_device({"h0/gpu" + std::to_string(r), topo::DeviceKind::gpu, h, 0});
    t.add_link(v, sw, topo::LinkKind::net, 10, 0);
    t.add_link(sw, v, topo::LinkKind::net, down[r], 0);
    t.map_rank(r, v);
  }
  return t;
}

TEST_P(EventSimModel, MaxMinFairnessGivesLeftoverBandwidthToTheUnblockedFlow) {
  // 0->2 and 1->2 are held to 1 GB/s each by r2's 2 GB/s downlink; 1->3 then gets the 9 GB/s
  // left on r1's uplink (an equal split would give it 5).
  Schedule s = blank(4);
  step(s, 0, {send(2, 2250)});
  step(s, 1, {send(2, 2250), send(3, 2250)});
  step(s, 2, {copy(0, 2250), copy(1, 2250)});
  step(s, 3, {copy(1, 2250)});
  const EventSimResult r = sim(s, star());
  EXPECT_NEAR(r.rank_finish_us[3], 9000.0 / 9000, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[2], 9000.0 / 1000, 1e-9);
  EXPECT_NEAR(r.rank_finish_us[1], 9000.0 / 1000, 1e-9);
}

TEST_P(EventSimModel, ZeroBytesCostOnlyLatencyAndStepsChain) {
  Schedule s = blank(2);
  for (int k = 0; k < 3; ++k) {
    step(s, 0, {send(1, 0)});
    step(s, 1, {copy(0, 0)});
  }
  step(s, 0, {});  // empty steps are skipped
  const EventSimResult r = sim(s, flat(2));
  EXPECT_NEAR(r.time_us, 15.0, 1e-9);
  EXPECT_TRUE(r.links.empty());
}

// Ranks 0 and 3 on devices a and b, ranks 1 and 2 on device d (reduces 10 GB/s = 10000 B/us);
// a -> d and b -> d 10 GB/s, 1 us each, and links back for connectivity.
topo::Topology two_ranks_on_one_device() {
  topo::Topology t;
  t.name = "shared-device";
  const int h = t.add_host("h0");
  const topo::VertexId a = t.add_device({"h0/a", topo::DeviceKind::gpu, h, 0});
  const topo::VertexId d = t.add_device({"h0/d", topo::DeviceKind::gpu, h, 10});
  const topo::VertexId b = t.add_device({"h0/b", topo::DeviceKind::gpu, h, 0});
  t.add_duplex_link(a, d, topo::LinkKind::nvlink, 10, 1);
  t.add_duplex_link(b, d, topo::LinkKind::nvlink, 10, 1);
  t.map_rank(0, a);
  t.map_rank(1, d);
  t.map_rank(2, d);
  t.map_rank(3, b);
  t.validate();
  return t;
}

TEST_P(EventSimModel, RanksOnOneDeviceShareItsReductionQueue) {
  // 1 -> 2 within device d takes no time and no link. Then 0 -> 1 and 3 -> 2 (10000 B each)
  // arrive at d together at 2 us; d reduces one block at a time, the lower receiving rank
  // first: rank 1 is done at 3 us, rank 2 at 4 us.
  Schedule s = blank(4);
  step(s, 1, {send(2, 2500)});
  step(s, 2, {copy(1, 2500)});
  step(s, 0, {send(1, 2500)});
  step(s, 3, {send(2, 2500)});
  step(s, 1, {reduce(0, 2500)});
  step(s, 2, {reduce(3, 2500)});
  const EventSimResult r = sim(s, two_ranks_on_one_device());
  EXPECT_NEAR(r.rank_finish_us[0], 2.0, 1e-12);
  EXPECT_NEAR(r.rank_finish_us[3], 2.0, 1e-12);
  EXPECT_NEAR(r.rank_finish_us[1], 3.0, 1e-12);
  EXPECT_NEAR(r.rank_finish_us[2], 4.0, 1e-12);
  EXPECT_EQ(r.links.size(), 2u);  // a -> d and b -> d
}

TEST(EventSim, TheReferenceEngineRecordsNoTrace) {
  Schedule s = blank(2);
  step(s, 0, {send(1, 100)});
  step(s, 1, {copy(0, 100)});
  EventSimOptions opts;
  opts.engine = EventEngine::reference;
  opts.record_trace = true;
  EXPECT_THROW(simulate_schedule(coll::StoredSteps(s), flat(2), opts), Error);
}

TEST(EventSim, TraceHasASliceForEverySendReceiveAndReduction) {
  Schedule s = blank(2);
  step(s, 0, {send(1, 100), reduce(1, 100)});
  step(s, 1, {send(0, 100), copy(0, 100)});
  EventSimOptions opts;
  opts.record_trace = true;
  const EventSimResult r = simulate_schedule(coll::StoredSteps(s), flat(2), opts);
  ASSERT_EQ(r.trace.size(), 5u);  // 2 sends, 2 receives, 1 reduction
  int reduces = 0;
  for (const TraceSlice& t : r.trace) {
    EXPECT_LE(t.start_us, t.end_us);
    EXPECT_LE(t.end_us, r.time_us + 1e-9);
    reduces += t.name.rfind("reduce", 0) == 0;
  }
  EXPECT_EQ(reduces, 1);
  EXPECT_TRUE(simulate_schedule(coll::StoredSteps(s), flat(2)).trace.empty());
}

TEST_P(EventSimModel, BadSchedulesAreErrorsNotHangs) {
  Schedule unmatched = blank(2);
  step(unmatched, 0, {send(1, 10)});
  EXPECT_THROW(sim(unmatched, flat(2)), Error);

  Schedule mismatched = blank(2);
  step(mismatched, 0, {send(1, 10)});
  step(mismatched, 1, {copy(0, 11)});
  EXPECT_THROW(sim(mismatched, flat(2)), Error);

  Schedule crossed = blank(2);  // both wait for a receive the other posts only later
  step(crossed, 0, {copy(1, 1)});
  step(crossed, 0, {send(1, 1)});
  step(crossed, 1, {copy(0, 1)});
  step(crossed, 1, {send(0, 1)});
  EXPECT_THROW(sim(crossed, flat(2)), Error);

  Schedule self = blank(2);
  step(self, 0, {send(0, 1)});
  EXPECT_THROW(sim(self, flat(2)), Error);

  EXPECT_THROW(sim(blank(3), flat(2)), Error);
}

TEST(EventSim, ConcurrentPlacementChecksRanks) {
  Schedule a = blank(2);
  step(a, 0, {send(1, 5)});
  step(a, 1, {copy(0, 5)});
  const Schedule both = run_concurrently({{&a, {0, 2}}, {&a, {3, 1}}}, 4);
  EXPECT_EQ(both.ranks[0][0].ops[0].peer, 2);
  EXPECT_EQ(both.ranks[3][0].ops[0].peer, 1);
  EXPECT_EQ(simulate_schedule(coll::StoredSteps(both), flat(4)).flows, 2u);
  EXPECT_THROW(run_concurrently({{&a, {0, 1}}, {&a, {1, 2}}}, 4), Error);
  EXPECT_THROW(run_concurrently({{&a, {0, 4}}}, 4), Error);
  EXPECT_THROW(run_concurrently({{&a, {0}}}, 4), Error);
}

}  // namespace
}  // namespace colltune::sim
