// Every registered allreduce algorithm on virtual ranks (the `cuda` transport: every rank on one
// GPU), compared bit for bit with the host reference: p = 1..9, sizes 0, 1, primes, p +- 1 and
// large, in and out of place, with and without pipeline chunks; every dtype x op; hierarchical
// on emulated hosts; fp16 compression against the CPU front end; the scratch path (receives
// overlapping sends); and the failure paths (a failing rank, a peer that never comes, a host
// codec). Inputs are small integers, so any reduction order is exact. Skips without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/cuda_transport.hpp"
#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/threads.hpp"
#include "colltune/common/error.hpp"
#include "gpu_test_util.hpp"
#include "runtime_test_util.hpp"

namespace colltune {
namespace {

using coll::DType;
using coll::ReduceOp;
namespace cuda = coll::cuda;

std::vector<std::string> allreduce_ids() {
  std::vector<std::string> ids;
  for (const auto& a : coll::algorithms()) {
    if (a.collective == coll::Collective::allreduce && !a.in_switch) ids.push_back(a.id);  // nccl_nvls: a switch rank
  }
  return ids;
}

// Hierarchical algorithms on hosts of 2 or 3 ranks, the others on one host.
RankLayout layout_for(const std::string& id, int p) {
  if (id.rfind("hierarchical", 0) != 0 || p < 2) return RankLayout::single_host(p);
  const int per_host = p % 2 == 0 ? 2 : (p % 3 == 0 ? 3 : 2);
  std::vector<int> host_of(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) host_of[static_cast<std::size_t>(r)] = r / per_host;
  return RankLayout(host_of);
}

struct Case {
  std::size_t count;
  DType dtype;
  ReduceOp op;
  std::size_t chunk;
  bool in_place;
};

// One case on one rank: upload, allreduce on the device, download, compare.
void run_case(cuda::DeviceCommunicator& comm, const std::string& id, const Case& k, const std::vector<std::byte>& ref,
              const std::string& inner, test::FailureLog& log) {
  coll::AllreduceOptions o;
  o.algorithm = id;
  o.algo.chunk_elems = k.chunk;
  o.algo.inner = inner;
  o.dtype = k.dtype;
  o.op = k.op;
  o.timeout_s = 60;
  const auto in = test::make_input(k.dtype, k.op, comm.rank(), k.count);
  cuda::DeviceMemory din(in.size()), dout(k.in_place ? 0 : in.size());
  din.upload(in.data(), in.size(), comm.stream());
  void* result = k.in_place ? din.get() : dout.get();
  coll::allreduce(comm, din.get(), result, k.count, o);
  std::vector<std::byte> got(in.size());
  (k.in_place ? din : dout).download(got.data(), got.size(), comm.stream());
  const auto bad = test::first_mismatch(got.data(), ref.data(), k.count, coll::dtype_size(k.dtype));
  if (bad >= 0) {
    log.add(id + " p=" + std::to_string(comm.size()) + " rank " + std::to_string(comm.rank()) + " count " +
            std::to_string(k.count) + " " + std::string(coll::to_string(k.dtype)) + " " +
            std::string(coll::to_string(k.op)) + " chunk " + std::to_string(k.chunk) +
            (k.in_place ? " in place" : " out of place") + " inner " + inner + ": element " + std::to_string(bad));
  }
}

// Runs every applicable case on one set of virtual ranks; returns how many ran.
std::size_t run_cases(const std::string& id, const RankLayout& layout, const std::vector<Case>& cases,
                      test::FailureLog& log, const std::string& inner = "ring") {
  std::vector<bool> applicable(cases.size());
  std::vector<std::vector<std::byte>> refs(cases.size());
  std::size_t ran = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    coll::AlgoOptions algo;
    algo.chunk_elems = cases[c].chunk;
    algo.inner = inner;
    applicable[c] = !coll::find_algorithm(id).not_applicable(layout, cases[c].count, algo).has_value();
    if (applicable[c]) refs[c] = test::make_reference(cases[c].dtype, cases[c].op, layout.nranks(), cases[c].count);
    ran += applicable[c];
  }
  cuda::run_virtual_ranks(layout, [&](cuda::DeviceCommunicator& comm) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      if (applicable[c]) run_case(comm, id, cases[c], refs[c], inner, log);
    }
  });
  return ran;
}

class GpuVirtualRanks : public ::testing::Test {
 protected:
  void SetUp() override { COLLTUNE_REQUIRE_GPU(); }
};

TEST_F(GpuVirtualRanks, EveryAlgorithmEveryRankCountEverySize) {
  const auto ids = allreduce_ids();
  ASSERT_GE(ids.size(), 4u);
  test::FailureLog log;
  for (const auto& id : ids) {
    std::size_t ran = 0;
    for (int p = 1; p <= 9; ++p) {
      const auto up = static_cast<std::size_t>(p);
      std::set<std::size_t> sizes{0, 1, 2, 7, 13, up - 1, up, up + 1, 1009, 65537};
      if (p == 8 || p == 5) sizes.insert((std::size_t{1} << 22) + 3);
      std::vector<Case> cases;
      bool in_place = p % 2 == 0;
      for (std::size_t n : sizes) {
        const std::size_t chunk = n > 1009 ? 16411 : 7;  // multi-chunk paths, small and large
        cases.push_back({n, DType::f32, ReduceOp::sum, chunk, in_place});
        cases.push_back({n, DType::f32, ReduceOp::sum, 0, !in_place});
        in_place = !in_place;
      }
      ran += run_cases(id, layout_for(id, p), cases, log);
    }
    EXPECT_GT(ran, 0u) << id << " never ran";
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

TEST_F(GpuVirtualRanks, EveryDtypeAndOp) {
  const DType dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max, ReduceOp::prod};
  test::FailureLog log;
  for (const auto& id : allreduce_ids()) {
    for (int p : {2, 3, 8}) {
      std::vector<Case> cases;
      std::size_t i = 0;
      for (DType t : dtypes) {
        for (ReduceOp op : ops) {
          for (std::size_t n : {std::size_t{1}, std::size_t{1031}}) cases.push_back({n, t, op, i % 3 == 0 ? 64u : 0u, i++ % 2 == 0});
        }
      }
      run_cases(id, layout_for(id, p), cases, log);
    }
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

TEST_F(GpuVirtualRanks, HierarchicalOnEmulatedHostsWithEveryInner) {
  test::FailureLog log;
  for (const auto& layout : {RankLayout::uniform(2, 4), RankLayout::uniform(3, 3), RankLayout({0, 0, 0, 1, 1, 1, 2, 2})}) {
    for (const std::string inner : {"ring", "rhd", "tree", "dbtree"}) {
      for (const std::string id : {"hierarchical", "hierarchical_leader"}) {
        run_cases(id, layout, {{0, DType::f32, ReduceOp::sum, 0, true}, {4099, DType::f64, ReduceOp::sum, 64, false}},
                  log, inner);
      }
    }
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

// The device fp16 path equals the CPU's (same element math): the threads transport's result of
// the same algorithm, bit for bit, overflow counts included.
TEST_F(GpuVirtualRanks, Fp16CompressionMatchesTheCpuFrontEnd) {
  const int p = 5;
  const std::size_t n = 10007;
  coll::AllreduceOptions o;
  o.algorithm = "ring";
  o.op = ReduceOp::avg;
  o.compression = coll::Compression::fp16;
  o.prescale = 0.5;
  auto input = [n](int rank) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000) * 37.25f - 9000.0f + static_cast<float>(rank);
    v[3] = 3e5f;  // overflows fp16 after the prescale on every rank
    return v;
  };
  std::vector<std::vector<float>> cpu(p), gpu(p);
  std::vector<coll::AllreduceStats> cpu_stats(p), gpu_stats(p);
  coll::run_threads(p, [&](coll::Communicator& comm) {
    const auto in = input(comm.rank());
    auto& out = cpu[static_cast<std::size_t>(comm.rank())];
    out.resize(n);
    cpu_stats[static_cast<std::size_t>(comm.rank())] = coll::allreduce(comm, in.data(), out.data(), n, o);
  });
  cuda::run_virtual_ranks(RankLayout::single_host(p), [&](cuda::DeviceCommunicator& comm) {
    const auto in = input(comm.rank());
    auto din = test::to_device(in);
    cuda::DeviceMemory dout(n * sizeof(float));
    gpu_stats[static_cast<std::size_t>(comm.rank())] = coll::allreduce(comm, din.get(), dout.get(), n, o);
    gpu[static_cast<std::size_t>(comm.rank())] = test::to_host<float>(dout, n);
  });
  for (int r = 0; r < p; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    EXPECT_EQ(0, std::memcmp(gpu[ur].data(), cpu[ur].data(), n * sizeof(float))) << "rank " << r;
    EXPECT_EQ(gpu_stats[ur].input_overflows, cpu_stats[ur].input_overflows);
    EXPECT_EQ(gpu_stats[ur].result_overflows, cpu_stats[ur].result_overflows);
    EXPECT_GT(gpu_stats[ur].input_overflows, 0u);
  }
}

// Recursive doubling exchanges the whole buffer every step: each receive overlaps the step's
// send, so the sent bytes must be staged (the scratch path).
TEST_F(GpuVirtualRanks, ReceivesOverlappingSendsGoThroughScratch) {
  for (int p : {2, 4, 8}) {
    const std::size_t n = 4097;
    const coll::Schedule schedule = test::hand_recursive_doubling(p, n);
    const auto ref = test::make_reference(DType::i64, ReduceOp::sum, p, n);
    test::FailureLog log;
    cuda::run_virtual_ranks(RankLayout::single_host(p), [&](cuda::DeviceCommunicator& comm) {
      auto buf = test::to_device(test::make_input(DType::i64, ReduceOp::sum, comm.rank(), n));
      coll::execute(schedule, comm, buf.get(), 8, cuda::DeviceCodec(DType::i64, ReduceOp::sum, comm.stream()), 30);
      const auto got = test::to_host<std::byte>(buf, n * 8);
      if (test::first_mismatch(got.data(), ref.data(), n, 8) >= 0) log.add("rank " + std::to_string(comm.rank()));
    });
    EXPECT_EQ(log.count(), 0u) << "p=" << p << " " << log.summary();
  }
}

// One front end for every transport: what coll::allreduce refuses on host ranks it refuses on
// device ranks, with the same words, before any rank communicates.
TEST_F(GpuVirtualRanks, TheFrontEndRefusesWhatItRefusesOnTheHost) {
  std::vector<std::string> helpers(4), fp32acc(4);
  cuda::run_virtual_ranks(RankLayout::single_host(4), [&](cuda::DeviceCommunicator& comm) {
    cuda::DeviceMemory buf(16 * sizeof(float));
    coll::AllreduceOptions o;
    o.algorithm = "nccl_nvls";  // its NVSwitch rank is a helper, which ends with no result
    try {
      coll::allreduce(comm, buf.get(), buf.get(), 16, o);
    } catch (const Error& e) {
      helpers[static_cast<std::size_t>(comm.rank())] = e.what();
    }
    o.algorithm = "ring";
    o.compression = coll::Compression::fp16_fp32acc;
    try {
      coll::allreduce(comm, buf.get(), buf.get(), 16, o);
    } catch (const Error& e) {
      fp32acc[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(helpers[static_cast<std::size_t>(r)].find("its last 1 of 4 ranks are helpers"), std::string::npos)
        << helpers[static_cast<std::size_t>(r)];
    EXPECT_EQ(fp32acc[static_cast<std::size_t>(r)],
              "cuda transport: compression fp16_fp32acc is not supported on GPUs; use fp16");
  }
}

// reduce_scatter and allgather run on device buffers through the same front end, equal to the
// threads transport's results.
TEST_F(GpuVirtualRanks, ReduceScatterAndAllgatherOnDeviceBuffers) {
  const int p = 5;
  const std::size_t n = 1031;
  auto input = [n](int rank) {
    std::vector<std::int32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(i % 97) + rank;
    return v;
  };
  coll::AllreduceOptions rs;
  rs.algorithm = "reduce_scatter_ring";
  rs.dtype = DType::i32;
  coll::AllreduceOptions ag = rs;
  ag.algorithm = "allgather_ring";
  std::vector<std::vector<std::int32_t>> cpu(p), gpu(p);
  coll::run_threads(p, [&](coll::Communicator& comm) {
    auto buf = input(comm.rank());
    coll::reduce_scatter(comm, buf.data(), n, rs);
    coll::allgather(comm, buf.data(), n, ag);
    cpu[static_cast<std::size_t>(comm.rank())] = buf;
  });
  cuda::run_virtual_ranks(RankLayout::single_host(p), [&](cuda::DeviceCommunicator& comm) {
    auto buf = test::to_device(input(comm.rank()));
    coll::reduce_scatter(comm, buf.get(), n, rs);
    coll::allgather(comm, buf.get(), n, ag);
    cuda::synchronize(comm.stream(), 30, "test");
    gpu[static_cast<std::size_t>(comm.rank())] = test::to_host<std::int32_t>(buf, n);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(gpu[static_cast<std::size_t>(r)], cpu[static_cast<std::size_t>(r)]) << "rank " << r;
}

TEST_F(GpuVirtualRanks, AFailingRankReleasesTheOthers) {
  EXPECT_THROW(cuda::run_virtual_ranks(RankLayout::single_host(4),
                                       [](cuda::DeviceCommunicator& comm) {
                                         if (comm.rank() == 2) throw Error("rank 2 gives up");
                                         comm.barrier(30);
                                       }),
               Error);
}

TEST_F(GpuVirtualRanks, APeerThatNeverSendsTimesOutNamingIt) {
  coll::Schedule s = test::hand_schedule("half", 2, 8);
  s.ranks[0].push_back(coll::Step{{{coll::OpKind::recv_reduce, 1, {0, 8}}}});  // rank 1 never sends
  try {
    cuda::run_virtual_ranks(RankLayout::single_host(2), [&](cuda::DeviceCommunicator& comm) {
      cuda::DeviceMemory buf(8 * 4);
      coll::execute(s, comm, buf.get(), 4, cuda::DeviceCodec(DType::f32, ReduceOp::sum, comm.stream()), 0.5);
    });
    FAIL() << "no timeout";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 step 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("peer 1"), std::string::npos) << e.what();
  }
}

TEST_F(GpuVirtualRanks, AHostCodecIsRefused) {
  const coll::Schedule s = test::hand_ring(2, 16);
  EXPECT_THROW(cuda::run_virtual_ranks(RankLayout::single_host(2),
                                       [&](cuda::DeviceCommunicator& comm) {
                                         cuda::DeviceMemory buf(16 * 4);
                                         coll::execute(s, comm, buf.get(), 4, coll::PlainCodec(DType::f32, ReduceOp::sum));
                                       }),
               Error);
}

}  // namespace
}  // namespace colltune
