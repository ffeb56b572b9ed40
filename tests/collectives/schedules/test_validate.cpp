// validate() on hand-made schedules: it accepts a correct one and names the broken op.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "colltune/collectives/schedule.hpp"
#include "colltune/common/error.hpp"

using namespace colltune::coll;
using ::testing::HasSubstr;

namespace {

Op send(int peer, std::size_t off, std::size_t n) { return {OpKind::send, peer, {off, n}}; }
Op reduce(int peer, std::size_t off, std::size_t n) { return {OpKind::recv_reduce, peer, {off, n}}; }
Op copy(int peer, std::size_t off, std::size_t n) { return {OpKind::recv_copy, peer, {off, n}}; }

// Two ranks swap whole buffers and reduce: a correct allreduce.
Schedule swap_reduce() {
  Schedule s;
  s.algorithm = "hand";
  s.nranks = 2;
  s.count = 4;
  s.ranks = {{Step{{send(1, 0, 4), reduce(1, 0, 4)}}}, {Step{{send(0, 0, 4), reduce(0, 0, 4)}}}};
  return s;
}

std::string error_of(const Schedule& s) {
  try {
    validate(s);
  } catch (const colltune::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Validate, AcceptsCorrectSchedule) { EXPECT_NO_THROW(validate(swap_reduce())); }

TEST(Validate, RejectsUnmatchedSend) {
  Schedule s = swap_reduce();
  s.ranks[1][0].ops.pop_back();  // rank 1 never receives
  EXPECT_THAT(error_of(s), HasSubstr("rank 0 step 0 op 0 (send to 1 [0,4)): no matching receive"));
}

TEST(Validate, RejectsSizeMismatch) {
  Schedule s = swap_reduce();
  s.ranks[1][0].ops[1] = reduce(0, 0, 3);
  EXPECT_THAT(error_of(s), HasSubstr("element counts differ"));
}

TEST(Validate, RejectsPairedOpsOnDifferentChannels) {
  // The simulator routes a message by its channel: both ends must name the same one.
  Schedule s = swap_reduce();
  s.ranks[0][0].ops[0].channel = 1;
  EXPECT_THAT(error_of(s), HasSubstr("rank 0 step 0 op 0 (send to 1 [0,4)) pairs with rank 1 step 0 op 1"));
  EXPECT_THAT(error_of(s), HasSubstr("channels differ (1 and 0)"));
  s.ranks[1][0].ops[1].channel = 1;
  EXPECT_NO_THROW(validate(s));
}

TEST(Validate, RejectsDoubleCounting) {
  Schedule s = swap_reduce();
  // Rank 1 sends its (already reduced) buffer again: rank 0 would count itself twice.
  s.ranks[0].push_back(Step{{reduce(1, 0, 4)}});
  s.ranks[1].push_back(Step{{send(0, 0, 4)}});
  EXPECT_THAT(error_of(s), HasSubstr("rank 0 step 1 op 0 (recv_reduce from 1 [0,4))"));
  EXPECT_THAT(error_of(s), HasSubstr("twice"));
}

TEST(Validate, RejectsDeadlock) {
  Schedule s;
  s.algorithm = "hand";
  s.nranks = 2;
  s.count = 2;
  // Both ranks receive before they send: each waits for the other forever.
  s.ranks = {{Step{{reduce(1, 0, 2)}}, Step{{send(1, 0, 2)}}}, {Step{{reduce(0, 0, 2)}}, Step{{send(0, 0, 2)}}}};
  EXPECT_THAT(error_of(s), HasSubstr("deadlock: rank 0 step 0 op 0"));
}

TEST(Validate, RejectsOutOfRangeAndSelfPeers) {
  Schedule s = swap_reduce();
  s.ranks[0][0].ops[0] = send(1, 2, 4);
  EXPECT_THAT(error_of(s), HasSubstr("rank 0 step 0 op 0 (send to 1 [2,6)): block outside"));
  s = swap_reduce();
  s.ranks[1][0].ops[0] = send(1, 0, 4);
  EXPECT_THAT(error_of(s), HasSubstr("peer is the rank itself"));
  s = swap_reduce();
  s.ranks[1][0].ops[0] = send(5, 0, 4);
  EXPECT_THAT(error_of(s), HasSubstr("peer out of range"));
}

TEST(Validate, RejectsIncompleteResult) {
  Schedule s = swap_reduce();
  s.ranks[1][0].ops[1] = copy(0, 0, 4);  // rank 1 overwrites instead of reducing
  EXPECT_THAT(error_of(s), HasSubstr("rank 1 ends with elements [0,4) holding contributions of {0}"));
}

TEST(Validate, AllgatherNeedsEveryBlock) {
  Schedule s;
  s.algorithm = "hand";
  s.collective = Collective::allgather;
  s.nranks = 2;
  s.count = 2;
  s.owned = {{0, 1}, {1, 1}};
  s.ranks = {{Step{{send(1, 0, 1), copy(1, 1, 1)}}}, {Step{{send(0, 1, 1), copy(0, 0, 1)}}}};
  EXPECT_NO_THROW(validate(s));
  s.ranks[1][0].ops[1] = reduce(0, 0, 1);
  EXPECT_THAT(error_of(s), HasSubstr("undefined content"));
}

TEST(Validate, RejectsZeroRanks) {
  Schedule s;
  EXPECT_THAT(error_of(s), HasSubstr("at least one rank"));
}

TEST(Validate, CountsOpsAndElements) {
  const Schedule s = swap_reduce();
  EXPECT_EQ(s.total_ops(), 4U);
  EXPECT_EQ(s.total_elements_sent(), 8U);
  EXPECT_EQ(to_string(Collective::reduce_scatter), "reduce_scatter");
}
