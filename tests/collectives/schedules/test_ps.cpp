// The parameter-server schedule (algorithms/ps.cpp) and the helpers of the Schedule IR: dedicated
// servers (helpers) and colocated ones, uneven shard counts, pipelined chunks; validated
// symbolically and run on integer data by the reference interpreter, bit for bit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "reference.hpp"

using namespace colltune;
using namespace colltune::coll;
using ::testing::HasSubstr;

namespace {

// W workers on one host, then S servers on a host each.
RankLayout dedicated_layout(int workers, int servers) {
  std::vector<int> host(static_cast<std::size_t>(workers), 0);
  for (int s = 0; s < servers; ++s) host.push_back(1 + s);
  return RankLayout(host);
}

// W workers spread over `hosts` hosts, host h holding ranks h, h+hosts, ... (uneven when hosts
// does not divide W).
RankLayout spread_layout(int workers, int hosts) {
  std::vector<int> host;
  for (int r = 0; r < workers; ++r) host.push_back(r % hosts);
  return RankLayout(host);
}

AlgoOptions ps_options(int servers, bool colocated, std::size_t chunk = 0) {
  AlgoOptions o;
  o.ps_servers = servers;
  o.ps_colocated = colocated;
  o.chunk_elems = chunk;
  return o;
}

void check_exact(const RankLayout& layout, std::size_t count, const AlgoOptions& o) {
  SCOPED_TRACE("ranks=" + std::to_string(layout.nranks()) + " hosts=" + std::to_string(layout.nhosts()) +
               " S=" + std::to_string(o.ps_servers) + (o.ps_colocated ? " colocated" : " dedicated") +
               " count=" + std::to_string(count) + " chunk=" + std::to_string(o.chunk_elems));
  const Schedule s = build_schedule("ps", layout, count, o);
  ASSERT_NO_THROW(validate(s));
  EXPECT_EQ(s.helpers, o.ps_servers > 0 && !o.ps_colocated ? o.ps_servers : 0);
  EXPECT_EQ(test::check_data(s, test::run_data(s)), "");
}

}  // namespace

TEST(Ps, DedicatedServersExactForSeveralWorkersServersAndSizes) {
  for (int w : {1, 2, 3, 5, 8}) {
    for (int servers : {1, 2, 3, 7}) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t(servers - 1), std::size_t{7},
                                std::size_t{1000}, std::size_t{65537}}) {
        for (std::size_t chunk : {std::size_t{0}, std::size_t{3}, std::size_t{1000}}) {
          if (chunk == 3 && count > 1000) continue;  // 20k chunks per shard add nothing but time
          check_exact(dedicated_layout(w, servers), count, ps_options(servers, false, chunk));
        }
      }
    }
  }
}

TEST(Ps, ColocatedServersExactOnUnevenHosts) {
  for (int w : {2, 3, 5, 8, 13}) {
    for (int hosts = 1; hosts <= std::min(w, 4); ++hosts) {
      for (int servers = 0; servers <= hosts; ++servers) {
        for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1001}}) {
          check_exact(spread_layout(w, hosts), count, ps_options(servers, true, count > 7 ? 64 : 0));
        }
      }
    }
  }
}

TEST(Ps, BytesPerRankAreWhatTheFileSays) {
  // Dedicated: a worker sends n; server s sends W n/S; on 4 workers, 2 servers, n = 1000.
  const int w = 4;
  const int servers = 2;
  const std::size_t n = 1000;
  const Schedule s = build_schedule("ps", dedicated_layout(w, servers), n, ps_options(servers, false));
  auto sent = [&](int rank) {
    std::size_t e = 0;
    for (const Step& st : s.steps(rank))
      for (const Op& op : st.ops) e += op.kind == OpKind::send ? op.block.count : 0;
    return e;
  };
  for (int r = 0; r < w; ++r) EXPECT_EQ(sent(r), n);
  for (int k = 0; k < servers; ++k) EXPECT_EQ(sent(w + k), w * n / servers);
  EXPECT_EQ(s.steps(0).size(), 2U);  // push, pull
}

TEST(Ps, NotApplicableSaysWhy) {
  const Algorithm& a = find_algorithm("ps");
  EXPECT_THAT(a.not_applicable(dedicated_layout(2, 2), 10, ps_options(4, false)).value_or(""),
              HasSubstr("leave no worker"));
  EXPECT_THAT(a.not_applicable(spread_layout(8, 2), 10, ps_options(3, true)).value_or(""),
              HasSubstr("3 servers need 3 hosts"));
  EXPECT_THAT(a.not_applicable(spread_layout(8, 2), 10, ps_options(-1, false)).value_or(""), HasSubstr("at least 1"));
  EXPECT_FALSE(a.not_applicable(spread_layout(8, 2), 10, ps_options(2, true)).has_value());
  EXPECT_TRUE(a.baseline_only);
  EXPECT_FALSE(a.runs_on(Runtime::colltune));
}

// The helpers rule of validate(): a helper's input does not count and its buffer is not
// checked; breaking either is caught.
TEST(Helpers, ValidateHoldsTheRule) {
  Schedule s = build_schedule("ps", dedicated_layout(3, 1), 12, ps_options(1, false));
  ASSERT_NO_THROW(validate(s));
  // Make the server reduce worker 0's push instead of copying it: it would reduce into its
  // own (undefined) input.
  Schedule reduce_first = s;
  Op& first = reduce_first.ranks[3][0].ops[0];
  ASSERT_EQ(first.kind, OpKind::recv_copy);
  first.kind = OpKind::recv_reduce;
  EXPECT_THAT([&] { validate(reduce_first); }, ::testing::ThrowsMessage<Error>(HasSubstr("undefined content")));
  // Without helpers the server would be a data rank that ends without the sum (and its input
  // would be missing from everyone's).
  Schedule no_helpers = s;
  no_helpers.helpers = 0;
  EXPECT_THROW(validate(no_helpers), Error);
  Schedule all_helpers = s;
  all_helpers.helpers = 4;
  EXPECT_THAT([&] { validate(all_helpers); }, ::testing::ThrowsMessage<Error>(HasSubstr("4 helpers")));
}

TEST(Helpers, DataRanksAreCheckedAndHelpersAreNot) {
  Schedule s = build_schedule("ps", dedicated_layout(2, 1), 4, ps_options(1, false));
  auto bufs = test::run_data(s);
  bufs[2].assign(4, 12345);  // the server's buffer: anything
  EXPECT_EQ(test::check_data(s, bufs), "");
  bufs[1][3] += 1;
  EXPECT_EQ(test::check_data(s, bufs), "rank 1 element 3");
}
