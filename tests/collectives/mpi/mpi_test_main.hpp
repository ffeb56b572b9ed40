#pragma once
// main() for the MPI gtest executables: MPI is initialised around the tests, and the exit
// status is the worst over all ranks, so a failure on any rank fails the ctest entry.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#define COLLTUNE_MPI_TEST_MAIN                                                   \
  int main(int argc, char** argv) {                                              \
    int provided = 0;                                                            \
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);               \
    ::testing::InitGoogleTest(&argc, argv);                                      \
    int rank = 0;                                                                \
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);                                        \
    if (rank != 0) {                                                             \
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();         \
      delete listeners.Release(listeners.default_result_printer());              \
      listeners.Append(new RankFailurePrinter(rank));                            \
    }                                                                            \
    int result = RUN_ALL_TESTS();                                                \
    int worst = 0;                                                               \
    MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);         \
    MPI_Finalize();                                                              \
    return worst;                                                                \
  }

// Non-root ranks print their failures only (the root prints the full gtest report).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed()) std::printf("[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};
