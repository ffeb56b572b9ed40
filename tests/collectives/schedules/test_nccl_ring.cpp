// nccl_ring: k channels, each a ring over all ranks on 1/k of the buffer and on op channel c,
// visiting the ranks of every host in the channel's order. The schedule validates and computes
// exactly the reference result on uniform layouts, with the default channels and with given
// orders; every op carries its ring's channel; a channel leaves each host from the last rank of
// its order and enters the next at the first; bad orders and uneven hosts are not applicable;
// the cost hint (two hosts priced, scaled) against the priced schedule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/pricer.hpp"
#include "reference.hpp"

using namespace colltune;
using namespace colltune::coll;
using ::testing::HasSubstr;

namespace {

AlgoOptions with_orders(std::vector<std::vector<int>> orders, std::size_t chunk = 0) {
  AlgoOptions o;
  o.channel_orders = std::move(orders);
  o.chunk_elems = chunk;
  return o;
}

// Every op carries a channel of the orders; a send to another host leaves from the last rank of
// its channel's order and reaches the first rank of the next host.
void expect_host_crossings(const Schedule& s, const RankLayout& l, const std::vector<std::vector<int>>& orders) {
  for (int r = 0; r < s.nranks; ++r)
    for (const Step& step : s.ranks[static_cast<std::size_t>(r)])
      for (const Op& op : step.ops) {
        ASSERT_LT(op.channel, orders.size());
        if (op.kind != OpKind::send || l.host_of(op.peer) == l.host_of(r)) continue;
        const std::vector<int>& order = orders[op.channel];
        EXPECT_EQ(l.local_rank(r), order.back()) << "rank " << r << " channel " << op.channel;
        EXPECT_EQ(l.local_rank(op.peer), order.front()) << "rank " << r << " channel " << op.channel;
        EXPECT_EQ(l.host_of(op.peer), (l.host_of(r) + 1) % l.nhosts());
      }
}

void check(const RankLayout& l, std::size_t count, const AlgoOptions& o) {
  SCOPED_TRACE("hosts=" + std::to_string(l.nhosts()) + " p=" + std::to_string(l.nranks()) + " count=" +
               std::to_string(count) + " chunk=" + std::to_string(o.chunk_elems) + " channels=" +
               std::to_string(algo::nccl_ring_channels(l, o)));
  const Schedule s = build_schedule("nccl_ring", l, count, o);
  ASSERT_NO_THROW(validate(s));
  for (const auto& steps : s.ranks)
    for (const Step& st : steps)
      for (const Op& op : st.ops) ASSERT_GT(op.block.count, 0U);
  EXPECT_EQ(test::check_data(s, test::run_data(s)), "");
  if (l.nhosts() > 1 && count >= static_cast<std::size_t>(l.nranks()) * 8) {
    std::vector<std::vector<int>> orders = o.channel_orders;
    if (orders.empty())  // the default: channel c leaves from local rank c, enters at c+1
      for (int c = 0; c < l.min_ranks_per_host(); ++c) {
        orders.emplace_back();
        for (int i = 0; i < l.min_ranks_per_host(); ++i) orders.back().push_back((c + 1 + i) % l.min_ranks_per_host());
      }
    expect_host_crossings(s, l, orders);
  }
}

}  // namespace

TEST(NcclRing, DefaultChannelsOnUniformHosts) {
  for (auto [h, per] : {std::pair{1, 1}, {1, 5}, {2, 1}, {2, 4}, {3, 3}, {4, 2}, {2, 8}}) {
    const RankLayout l = RankLayout::uniform(h, per);
    EXPECT_EQ(algo::nccl_ring_channels(l, {}), per);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(per) + 1, std::size_t{1000},
                              std::size_t{65537}})
      for (std::size_t chunk : {std::size_t{0}, std::size_t{7}}) check(l, count, with_orders({}, chunk));
  }
}

TEST(NcclRing, GivenOrdersOnUniformHosts) {
  const std::vector<std::vector<int>> four{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}, {0, 2, 1, 3}};
  for (int hosts : {1, 2, 3})
    for (std::size_t count : {std::size_t{3}, std::size_t{4099}, std::size_t{65536}})
      for (std::size_t chunk : {std::size_t{0}, std::size_t{5}}) check(RankLayout::uniform(hosts, 4), count, with_orders(four, chunk));
}

TEST(NcclRing, TheChannelsShareTheBuffer) {
  // Three channels on 8 ranks: channel c moves only segment c of 3 of the buffer.
  const RankLayout l = RankLayout::uniform(2, 4);
  const std::size_t count = 3000;
  const Schedule s = build_schedule("nccl_ring", l, count, with_orders({{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}}));
  for (const auto& steps : s.ranks)
    for (const Step& st : steps)
      for (const Op& op : st.ops) {
        EXPECT_GE(op.block.offset, op.channel * 1000u);
        EXPECT_LE(op.block.end(), (op.channel + 1) * 1000u);
      }
}

TEST(NcclRing, NotApplicableToUnevenHostsOrBadOrders) {
  const Algorithm& a = find_algorithm("nccl_ring");
  EXPECT_THAT(a.not_applicable(RankLayout({0, 0, 1}), 10, {}).value_or(""), HasSubstr("same number of ranks on every host"));
  const RankLayout l = RankLayout::uniform(2, 3);
  EXPECT_THAT(a.not_applicable(l, 10, with_orders({{0, 1}})).value_or(""),
              HasSubstr("channel_orders[0] lists 2 local ranks, a host has 3"));
  EXPECT_THAT(a.not_applicable(l, 10, with_orders({{0, 1, 2}, {0, 3, 1}})).value_or(""),
              HasSubstr("channel_orders[1]: local rank 3 is not in 0..2"));
  EXPECT_THAT(a.not_applicable(l, 10, with_orders({{1, 1, 2}})).value_or(""), HasSubstr("local rank 1 twice"));
  EXPECT_THAT(a.not_applicable(l, 10, with_orders(std::vector<std::vector<int>>(65, {0, 1, 2}))).value_or(""),
              HasSubstr("65 channels, at most 64"));
  EXPECT_THROW(build_schedule("nccl_ring", l, 10, with_orders({{0, 1}})), colltune::Error);
  // colltune's schedule of NCCL's ring: the tuner's NCCL and Horovod runtimes price NCCL's own
  // ring (registry `ring`, NCCL name "ring") with NCCL's model, so this entry is colltune's.
  EXPECT_EQ(a.nccl_name, "");
  EXPECT_TRUE(a.runs_on(Runtime::colltune));
  EXPECT_FALSE(a.runs_on(Runtime::nccl));
  EXPECT_TRUE(a.nccl_ring_channels);
}

// The hint scales two hosts' priced schedule: exact for even sizes with the default channels
// (every rank leaves its host on one channel), an upper bound within 25% otherwise.
TEST(NcclRing, CostHintMatchesThePricedSchedule) {
  LevelCosts c;
  c.alpha_intra_us = 2.0;
  c.beta_intra_us_per_byte = 1e-4;
  c.alpha_inter_us = 7.0;
  c.beta_inter_us_per_byte = 4e-4;
  c.gamma_us_per_byte = 3e-5;
  const Algorithm& a = find_algorithm("nccl_ring");
  int exact = 0;
  for (auto [h, per] : {std::pair{3, 1}, {3, 2}, {4, 3}, {5, 4}, {3, 8}})
    for (bool separate : {false, true})
      for (double host_nics : {0.0, 2.0, 1.0})
        for (std::size_t chunk : {std::size_t{0}, std::size_t{50}}) {
          const RankLayout l = RankLayout::uniform(h, per);
          const auto p = static_cast<std::size_t>(l.nranks());
          LevelCosts costs = c;
          costs.separate_level_ports = separate;
          costs.beta_host_us_per_byte = host_nics > 0 ? c.beta_inter_us_per_byte / host_nics : 0.0;
          AlgoOptions o;
          o.chunk_elems = chunk;
          for (std::size_t count : {p * static_cast<std::size_t>(per) * 200, p * static_cast<std::size_t>(per) * 200 + 7}) {
            SCOPED_TRACE("hosts " + std::to_string(h) + " x " + std::to_string(per) + " count " + std::to_string(count) +
                         " chunk " + std::to_string(chunk) + " separate " + std::to_string(separate) + " nics " +
                         std::to_string(host_nics));
            const double hinted = sim::hint_or_price(a, l, count * 4, 4, o, costs);
            const double priced = sim::price_schedule(StoredSteps(build_schedule("nccl_ring", l, count, o)), l, 4, costs);
            const bool even = count % (p * static_cast<std::size_t>(per)) == 0 && (chunk == 0 || (count / p / per) % chunk == 0);
            if (even) {
              EXPECT_NEAR(hinted, priced, 1e-9 * priced);
              ++exact;
            }
            EXPECT_GE(hinted, priced * (1 - 1e-9));
            EXPECT_LE(hinted, priced * 1.25);
          }
        }
  EXPECT_GT(exact, 20);
}
