// The bench over MPI processes: our algorithms and the MPI_Allreduce baseline in one checked
// sweep, including hierarchical on emulated hosts.
#include <gtest/gtest.h>

#include <sstream>

#include "colltune/bench/bench_mpi.hpp"
#include "mpi_test_main.hpp"

namespace colltune {
namespace {

TEST(MpiBench, CheckedSweepWithTheVendorBaseline) {
  coll::MpiOptions options;
  options.ranks_per_host = 2;
  coll::MpiCommunicator comm(MPI_COMM_WORLD, options);
  bench::BenchConfig c;
  c.transport = bench::Transport::mpi;
  c.algorithms = {"ring", "tree", "dbtree", "rhd", "hierarchical_leader", "mpi"};
  c.min_bytes = 4;
  c.max_bytes = 256 * 1024;
  c.factor = 8;
  c.iters = 2;
  c.warmup = 1;
  c.measure_memcpy = false;
  for (auto op : {coll::ReduceOp::sum, coll::ReduceOp::avg, coll::ReduceOp::prod}) {
    c.op = op;
    std::ostringstream out;
    const auto report = bench::run_mpi_bench(c, comm, &out);
    EXPECT_EQ(report.total_wrong(), 0) << out.str();
    EXPECT_EQ(report.rows.size(), c.algorithms.size() * bench::sweep_sizes(c).size());
    if (comm.rank() == 0) {
      EXPECT_NE(out.str().find("Avg bus bandwidth"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace colltune

COLLTUNE_MPI_TEST_MAIN
