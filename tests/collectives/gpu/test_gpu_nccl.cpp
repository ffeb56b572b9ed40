// The nccl transport (one rank per GPU, one thread per GPU): every registered allreduce
// algorithm and the ncclAllReduce baseline against the host reference, bit for bit, on every
// GPU of the machine; on one GPU the single-rank communicator (initialisation, barrier, the
// baseline, finalisation). Skips, saying why, without a device or, for the multi-rank tests,
// with fewer than two GPUs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "colltune/collectives/nccl_transport.hpp"
#include "colltune/collectives/registry.hpp"
#include "gpu_test_util.hpp"
#include "runtime_test_util.hpp"

namespace colltune {
namespace {

using coll::DType;
using coll::ReduceOp;
namespace cuda = coll::cuda;

// Checks one allreduce on every rank: `run` reduces din into dout.
template <class Run>
void check_on_every_gpu(int p, DType t, ReduceOp op, std::size_t n, const std::string& what, test::FailureLog& log,
                        Run run) {
  const auto ref = test::make_reference(t, op, p, n);
  coll::nccl::run_threads(p, [&](cuda::DeviceCommunicator& comm) {
    auto din = test::to_device(test::make_input(t, op, comm.rank(), n));
    cuda::DeviceMemory dout(n * coll::dtype_size(t));
    run(comm, din.get(), dout.get());
    cuda::synchronize(comm.stream(), 60, "test");
    const auto got = test::to_host<std::byte>(dout, n * coll::dtype_size(t));
    if (const auto bad = test::first_mismatch(got.data(), ref.data(), n, coll::dtype_size(t)); bad >= 0) {
      log.add(what + " " + std::string(coll::to_string(t)) + " " + std::string(coll::to_string(op)) + " n=" +
              std::to_string(n) + " rank " + std::to_string(comm.rank()) + ": element " + std::to_string(bad));
    }
  });
}

TEST(GpuNccl, OneRankOnOneGpu) {
  COLLTUNE_REQUIRE_GPU();
  test::FailureLog log;
  check_on_every_gpu(1, DType::f32, ReduceOp::sum, 1000, "ncclAllReduce", log,
                     [](cuda::DeviceCommunicator& comm, const void* in, void* out) {
                       comm.barrier(30);
                       coll::nccl::allreduce(comm, in, out, 1000, DType::f32, ReduceOp::sum);
                     });
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

class GpuNcclMultiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    COLLTUNE_REQUIRE_GPU();
    if (cuda::device_count() < 2) {
      GTEST_SKIP() << "the nccl transport needs 2 or more GPUs for this test, this machine has "
                   << cuda::device_count();
    }
  }
};

TEST_F(GpuNcclMultiGpu, EveryAlgorithmAndTheBaselineOnEveryGpu) {
  const int p = cuda::device_count();
  test::FailureLog log;
  for (const auto& a : coll::algorithms()) {
    if (a.collective != coll::Collective::allreduce || a.in_switch) continue;  // nccl_nvls: a switch rank
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(p) + 1, std::size_t{65537}}) {
      if (a.not_applicable(RankLayout::single_host(p), n, {}).has_value()) continue;
      for (bool in_place : {false, true}) {
        check_on_every_gpu(p, DType::f32, ReduceOp::sum, n, a.id, log,
                           [&](cuda::DeviceCommunicator& comm, void* in, void* out) {
                             coll::AllreduceOptions o;
                             o.algorithm = a.id;
                             if (in_place) {
                               cuda::copy(out, in, n * 4, comm.stream());
                               in = out;
                             }
                             coll::allreduce(comm, in, out, n, o);
                           });
      }
    }
  }
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max, ReduceOp::prod}) {
      check_on_every_gpu(p, t, op, 4099, "ring", log, [&](cuda::DeviceCommunicator& comm, void* in, void* out) {
        coll::AllreduceOptions o;
        o.dtype = t;
        o.op = op;
        coll::allreduce(comm, in, out, 4099, o);
      });
      check_on_every_gpu(p, t, op, 4099, "ncclAllReduce", log, [&](cuda::DeviceCommunicator& comm, void* in, void* out) {
        coll::nccl::allreduce(comm, in, out, 4099, t, op);
      });
    }
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

}  // namespace
}  // namespace colltune
