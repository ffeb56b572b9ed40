// The threads transport and the executor on hand-built schedules: results, the scratch path
// for receives that overlap sends, timeouts, failure propagation and bad input.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>

#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/threads.hpp"
#include "colltune/common/error.hpp"
#include "runtime_test_util.hpp"

namespace colltune {
namespace {

using coll::DType;
using coll::ReduceOp;

// Runs `schedule` as an f32 sum over threads and checks every rank against the reference.
void expect_schedule_sums(const coll::Schedule& schedule) {
  const int p = schedule.nranks;
  const std::size_t n = schedule.count;
  const auto ref = test::make_reference(DType::f32, ReduceOp::sum, p, n);
  test::FailureLog log;
  coll::run_threads(p, [&](coll::Communicator& comm) {
    auto buf = test::make_input(DType::f32, ReduceOp::sum, comm.rank(), n);
    coll::execute(schedule, comm, buf.data(), sizeof(float), coll::PlainCodec(DType::f32, ReduceOp::sum));
    const auto bad = test::first_mismatch(buf.data(), ref.data(), n, sizeof(float));
    if (bad >= 0) log.add("rank " + std::to_string(comm.rank()) + " element " + std::to_string(bad));
  });
  EXPECT_EQ(log.count(), 0u) << schedule.algorithm << " p=" << p << " n=" << n << "\n" << log.summary();
}

TEST(Threads, HandRingIsExactForManyRankCountsAndSizes) {
  for (int p = 1; p <= 9; ++p) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(p) + 1, std::size_t{1000}}) {
      expect_schedule_sums(test::hand_ring(p, n));
    }
  }
}

TEST(Threads, ReceiveOverlappingSendUsesScratch) {
  // Without the scratch copy a rank would overwrite bytes its partner is still reading.
  for (int p : {2, 4, 8}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{4096}}) {
      expect_schedule_sums(test::hand_recursive_doubling(p, n));
    }
  }
}

TEST(Threads, CommunicatorKnowsRankSizeAndLayout) {
  const RankLayout layout = RankLayout::uniform(2, 3);
  std::atomic<int> seen{0};
  coll::run_threads(layout, [&](coll::Communicator& comm) {
    EXPECT_EQ(comm.size(), 6);
    EXPECT_EQ(comm.layout(), layout);
    EXPECT_EQ(comm.transport(), "threads");
    seen += 1 << comm.rank();
  });
  EXPECT_EQ(seen.load(), 63);
}

TEST(Threads, BarrierHoldsEveryRankUntilAllArrive) {
  std::atomic<int> arrived{0};
  test::FailureLog log;
  coll::run_threads(7, [&](coll::Communicator& comm) {
    ++arrived;
    comm.barrier(30.0);
    if (arrived.load() != 7) log.add("rank " + std::to_string(comm.rank()) + " left the barrier early");
  });
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

TEST(Threads, MissingPeerEndsWithTimeoutNamingRankPeerAndStep) {
  const auto schedule = test::hand_ring(2, 10);
  try {
    coll::run_threads(2, [&](coll::Communicator& comm) {
      if (comm.rank() == 1) return;  // never arrives
      std::vector<float> buf(10, 1.0f);
      coll::execute(schedule, comm, buf.data(), sizeof(float), coll::PlainCodec(DType::f32, ReduceOp::sum), 0.2);
    });
    FAIL() << "expected a TimeoutError";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 0 step 0"), std::string::npos) << what;
    EXPECT_NE(what.find("peer 1"), std::string::npos) << what;
  }
}

TEST(Threads, UnreceivedSendEndsWithTimeout) {
  coll::Schedule s = test::hand_schedule("one_way", 2, 4);
  s.ranks[0].push_back(coll::Step{{{coll::OpKind::send, 1, {0, 4}}}});
  EXPECT_THROW(coll::run_threads(2,
                                 [&](coll::Communicator& comm) {
                                   std::vector<float> buf(4, 1.0f);
                                   coll::execute(s, comm, buf.data(), sizeof(float),
                                                 coll::PlainCodec(DType::f32, ReduceOp::sum), 0.2);
                                 }),
               TimeoutError);
}

TEST(Threads, FailingRankReleasesTheOthers) {
  // The other ranks wait with a timeout far beyond ctest's: only the abort can end them.
  const auto schedule = test::hand_ring(4, 100);
  try {
    coll::run_threads(4, [&](coll::Communicator& comm) {
      if (comm.rank() == 2) throw std::runtime_error("rank 2 broke");
      std::vector<float> buf(100, 1.0f);
      coll::execute(schedule, comm, buf.data(), sizeof(float), coll::PlainCodec(DType::f32, ReduceOp::sum), 1e6);
    });
    FAIL() << "expected the rank's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 2 broke");
  }
}

TEST(Threads, MismatchedMessageSizeIsAnError) {
  coll::Schedule s = test::hand_schedule("mismatch", 2, 4);
  s.ranks[0].push_back(coll::Step{{{coll::OpKind::send, 1, {0, 3}}}});
  s.ranks[1].push_back(coll::Step{{{coll::OpKind::recv_reduce, 0, {0, 2}}}});
  try {
    coll::run_threads(2, [&](coll::Communicator& comm) {
      std::vector<float> buf(4, 1.0f);
      coll::execute(s, comm, buf.data(), sizeof(float), coll::PlainCodec(DType::f32, ReduceOp::sum), 5.0);
    });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("12 bytes, the receive expects 8"), std::string::npos) << e.what();
  }
}

TEST(Threads, BadInputIsAnError) {
  EXPECT_THROW(coll::run_threads(0, [](coll::Communicator&) {}), Error);
  const auto schedule = test::hand_ring(3, 9);
  EXPECT_THROW(coll::run_threads(2,
                                 [&](coll::Communicator& comm) {
                                   std::vector<float> buf(9);
                                   coll::execute(schedule, comm, buf.data(), sizeof(float),
                                                 coll::PlainCodec(DType::f32, ReduceOp::sum));
                                 }),
               Error);
}

// A thread that cannot be created (here: the address space is nearly full, so its stack cannot
// be mapped) ends the run at once with the cause; the ranks already running do not wait out
// their timeout. In a forked child, whose address-space limit cannot hurt the test process.
// Not under ASan/TSan, whose shadow memory needs the address space this limit takes away.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST(Threads, AThreadThatCannotStartEndsTheRunAtOnce) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::ifstream statm("/proc/self/statm");
    long pages = 0;
    statm >> pages;
    const rlim_t room = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (64u << 20);
    const rlimit rl{room, room};  // ~8 thread stacks of 8 MiB fit, 64 threads do not
    ::setrlimit(RLIMIT_AS, &rl);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      coll::run_threads(64, [](coll::Communicator& comm) { comm.barrier(60.0); });
    } catch (const Error& e) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const bool named = std::string(e.what()).find("cannot start the thread of rank") != std::string::npos;
      ::_exit(named && s < 10 ? 0 : 4);
    } catch (...) {
      ::_exit(5);
    }
    ::_exit(6);  // every thread started: the limit did not bite
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "4: wrong message or waited for the timeout; 5: not a colltune::Error; "
                                       "6: no thread failed to start";
}
#endif

}  // namespace
}  // namespace colltune
