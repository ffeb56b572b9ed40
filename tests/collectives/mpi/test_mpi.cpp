// The MPI transport under mpirun (2-5 processes): every registry allreduce algorithm x
// dtype x op, compared bit-exactly with MPI_Allreduce and the host reference; emulated hosts
// for hierarchical; split messages; fp16 compression; timeouts.
#include <gtest/gtest.h>

#include <cstdlib>

#include "collectives/runtime/runtime_test_util.hpp"
#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/mpi.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "mpi_test_main.hpp"

namespace colltune {
namespace {

using coll::DType;
using coll::ReduceOp;

// Runs `algorithm` over `comm` for one case and compares with MPI_Allreduce and the reference.
void expect_matches_mpi(coll::MpiCommunicator& comm, const std::string& algorithm, DType dtype, ReduceOp op,
                        std::size_t count, std::size_t chunk, bool in_place, const std::string& inner = "ring") {
  coll::AlgoOptions algo;
  algo.chunk_elems = chunk;
  algo.inner = inner;
  if (coll::find_algorithm(algorithm).not_applicable(comm.layout(), count, algo)) return;
  coll::AllreduceOptions o;
  o.algorithm = algorithm;
  o.algo = algo;
  o.dtype = dtype;
  o.op = op;
  o.timeout_s = 60;
  const auto in = test::make_input(dtype, op, comm.rank(), count);
  auto ours = in;
  std::vector<std::byte> out(in.size());
  coll::allreduce(comm, ours.data(), in_place ? ours.data() : out.data(), count, o);
  const void* result = in_place ? ours.data() : out.data();
  std::vector<std::byte> theirs(in.size());
  coll::mpi_allreduce(comm, in.data(), theirs.data(), count, dtype, op);
  const auto ref = test::make_reference(dtype, op, comm.size(), count);
  const std::size_t es = coll::dtype_size(dtype);
  EXPECT_EQ(test::first_mismatch(result, theirs.data(), count, es), -1)
      << algorithm << " " << coll::to_string(dtype) << " " << coll::to_string(op) << " count " << count << " chunk "
      << chunk << " inner " << inner << " vs MPI_Allreduce";
  EXPECT_EQ(test::first_mismatch(result, ref.data(), count, es), -1) << algorithm << " vs reference";
}

std::vector<std::string> allreduce_ids() {
  std::vector<std::string> ids;
  for (const auto& a : coll::algorithms()) {
    // nccl_nvls's last rank is the NVSwitch, not a GPU (tests/collectives/runtime runs it on threads).
    if (a.collective == coll::Collective::allreduce && !a.in_switch) ids.push_back(a.id);
  }
  return ids;
}

TEST(Mpi, EveryAlgorithmMatchesMpiAllreduce) {
  coll::MpiCommunicator comm;
  const auto p = static_cast<std::size_t>(comm.size());
  for (const auto& id : allreduce_ids()) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, p - 1, p, p + 1,
                          std::size_t{1000}, std::size_t{65537}}) {
      expect_matches_mpi(comm, id, DType::f32, ReduceOp::sum, n, 0, n % 2 == 0);
      expect_matches_mpi(comm, id, DType::f32, ReduceOp::sum, n, 5, n % 2 == 1);
    }
  }
}

// The ps schedule with a dedicated server (a helper, Schedule::helpers): the last rank serves,
// the others are workers whose result is the reference over the workers alone; the server's
// buffer starts as garbage and is not checked.
TEST(Mpi, PsWithADedicatedServer) {
  coll::MpiCommunicator comm;
  coll::AlgoOptions algo;
  algo.ps_servers = 1;
  for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1001}}) {
    for (std::size_t chunk : {std::size_t{0}, std::size_t{16}}) {
      algo.chunk_elems = chunk;
      const coll::Schedule s = coll::build_schedule("ps", comm.layout(), count, algo);
      const bool worker = !s.is_helper(comm.rank());
      auto buf = worker ? test::make_input(DType::f32, ReduceOp::sum, comm.rank(), count)
                        : std::vector<std::byte>(count * 4, std::byte{0x7f});
      const coll::PlainCodec codec(DType::f32, ReduceOp::sum);
      coll::execute(s, comm, buf.data(), 4, codec, 60);
      if (!worker) continue;
      const auto ref = test::make_reference(DType::f32, ReduceOp::sum, s.data_ranks(), count);
      EXPECT_EQ(test::first_mismatch(buf.data(), ref.data(), count, 4), -1) << "count " << count << " chunk " << chunk;
    }
  }
}

TEST(Mpi, EveryDtypeAndOpMatchesMpiAllreduce) {
  coll::MpiCommunicator comm;
  int i = 0;
  for (const auto& id : allreduce_ids()) {
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64}) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max, ReduceOp::prod}) {
        expect_matches_mpi(comm, id, t, op, 301, (i % 3) ? 0 : 16, (i % 2) == 0);
        ++i;
      }
    }
  }
}

TEST(Mpi, HierarchicalOnEmulatedHosts) {
  coll::MpiOptions options;
  options.ranks_per_host = 2;
  coll::MpiCommunicator comm(MPI_COMM_WORLD, options);
  EXPECT_EQ(comm.layout().nhosts(), (comm.size() + 1) / 2);
  for (const std::string inner : {"ring", "rhd", "tree"}) {
    for (const std::string id : {"hierarchical", "hierarchical_leader"}) {
      expect_matches_mpi(comm, id, DType::f32, ReduceOp::sum, 4099, 0, true, inner);
      expect_matches_mpi(comm, id, DType::i64, ReduceOp::max, 33, 4, false, inner);
    }
  }
}

TEST(Mpi, SharedMemoryHostsAndTheEnvironmentOverride) {
  coll::MpiCommunicator comm;
  EXPECT_EQ(comm.layout().nhosts(), 1);  // mpirun on one machine
  EXPECT_EQ(comm.layout().nranks(), comm.size());
  ::setenv("COLLTUNE_RANKS_PER_HOST", "1", 1);
  EXPECT_EQ(coll::ranks_per_host_from_env(), 1);
  ::setenv("COLLTUNE_RANKS_PER_HOST", "two", 1);
  EXPECT_THROW(coll::ranks_per_host_from_env(), Error);
  ::unsetenv("COLLTUNE_RANKS_PER_HOST");
  EXPECT_EQ(coll::ranks_per_host_from_env(), 0);
}

TEST(Mpi, LongBlocksTravelInPieces) {
  coll::MpiOptions options;
  options.max_message_bytes = 1000;  // small, to reach the splitting path cheaply
  coll::MpiCommunicator comm(MPI_COMM_WORLD, options);
  expect_matches_mpi(comm, "ring", DType::f32, ReduceOp::sum, 65537, 0, true);
  expect_matches_mpi(comm, "rhd", DType::f64, ReduceOp::sum, 10007, 0, false);
  EXPECT_THROW(coll::MpiCommunicator(MPI_COMM_WORLD, coll::MpiOptions{0, 0}), Error);
}

TEST(Mpi, Fp16CompressionMatchesTheExactResultOnSmallIntegers) {
  coll::MpiCommunicator comm;
  for (auto mode : {coll::Compression::fp16, coll::Compression::fp16_fp32acc}) {
    coll::AllreduceOptions o;
    o.compression = mode;
    o.op = ReduceOp::avg;
    auto x = test::make_input(DType::f32, ReduceOp::avg, comm.rank(), 5000);
    const auto ref = test::make_reference(DType::f32, ReduceOp::sum, comm.size(), 5000);
    coll::allreduce(comm, x.data(), x.data(), 5000, o);
    const auto* got = reinterpret_cast<const float*>(x.data());
    const auto* sum = reinterpret_cast<const float*>(ref.data());
    for (std::size_t i = 0; i < 5000; ++i) {
      ASSERT_FLOAT_EQ(got[i], sum[i] / static_cast<float>(comm.size())) << coll::to_string(mode) << " " << i;
    }
  }
}

TEST(Mpi, AbsentPeerEndsWithTimeout) {
  coll::MpiCommunicator comm;
  // Rank 0 expects a message from rank 1 that is never sent.
  coll::Schedule s;
  s.algorithm = "absent";
  s.nranks = comm.size();
  s.count = 4;
  s.ranks.resize(static_cast<std::size_t>(comm.size()));
  s.ranks[0].push_back(coll::Step{{{coll::OpKind::recv_copy, 1, {0, 4}}}});
  std::vector<float> buf(4);
  if (comm.rank() == 0) {
    try {
      coll::execute(s, comm, buf.data(), sizeof(float), coll::PlainCodec(DType::f32, ReduceOp::sum), 0.3);
      ADD_FAILURE() << "expected a TimeoutError";
    } catch (const TimeoutError& e) {
      EXPECT_NE(std::string(e.what()).find("receive from peer 1"), std::string::npos) << e.what();
    }
  }
  comm.barrier(60);
}

}  // namespace
}  // namespace colltune

COLLTUNE_MPI_TEST_MAIN
