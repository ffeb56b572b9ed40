// The allreduce front end: scaling, in/out of place, the schedule cache, reduce-scatter and
// allgather entry points, fp16 compression (exactness, error bounds, overflow) and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/compression.hpp"
#include "colltune/collectives/threads.hpp"
#include "colltune/common/error.hpp"
#include "runtime_test_util.hpp"

namespace colltune {
namespace {

using coll::DType;
using coll::ReduceOp;

coll::AllreduceOptions options(const std::string& algorithm, DType dtype = DType::f32, ReduceOp op = ReduceOp::sum) {
  coll::AllreduceOptions o;
  o.algorithm = algorithm;
  o.dtype = dtype;
  o.op = op;
  o.timeout_s = 30;
  return o;
}

TEST(AllreduceFrontEnd, PreAndPostScaleAndAverage) {
  test::FailureLog log;
  coll::run_threads(4, [&](coll::Communicator& comm) {
    std::vector<double> x(10, static_cast<double>(comm.rank() + 1));  // sum = 10
    auto o = options("ring", DType::f64, ReduceOp::avg);
    o.prescale = 2.0;
    o.postscale = 0.5;
    std::vector<double> y(10);
    coll::allreduce(comm, x.data(), y.data(), 10, o);
    for (double v : y) {
      if (v != 2.5) log.add("avg with scales gave " + std::to_string(v));  // (2 x 10) / 4 x 0.5
    }
    if (x[0] != comm.rank() + 1) log.add("out-of-place allreduce changed its input");
  });
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

TEST(AllreduceFrontEnd, SchedulesAreCachedPerAlgorithmAndCount) {
  coll::run_threads(3, [&](coll::Communicator& comm) {
    std::vector<float> x(100, 1.0f);
    for (int i = 0; i < 5; ++i) coll::allreduce(comm, x.data(), x.data(), 100, options("ring"));
    coll::allreduce(comm, x.data(), x.data(), 50, options("ring"));
    coll::allreduce(comm, x.data(), x.data(), 50, options("tree"));
    EXPECT_EQ(comm.schedules().size(), 3u);
    EXPECT_EQ(x[0], 3.0f * 3.0f * 3.0f * 3.0f * 3.0f * 3.0f * 3.0f);
  });
}

TEST(AllreduceFrontEnd, ReduceScatterThenAllgatherIsAnAllreduce) {
  for (int p : {1, 2, 3, 5, 8}) {
    const std::size_t n = 1000 + static_cast<std::size_t>(p);
    const auto ref = test::make_reference(DType::i32, ReduceOp::sum, p, n);
    test::FailureLog log;
    coll::run_threads(p, [&](coll::Communicator& comm) {
      auto buf = test::make_input(DType::i32, ReduceOp::sum, comm.rank(), n);
      const coll::Block mine = coll::reduce_scatter(comm, buf.data(), n, options("reduce_scatter_ring", DType::i32));
      const auto* got = reinterpret_cast<const std::int32_t*>(buf.data());
      const auto* want = reinterpret_cast<const std::int32_t*>(ref.data());
      for (std::size_t i = mine.offset; i < mine.end(); ++i) {
        if (got[i] != want[i]) log.add("reduce_scatter element " + std::to_string(i));
      }
      const auto o = options("allgather_ring", DType::i32);
      EXPECT_EQ(coll::owned_block(comm, n, o), mine);
      coll::allgather(comm, buf.data(), n, o);
      if (test::first_mismatch(buf.data(), ref.data(), n, 4) >= 0) log.add("allgather p=" + std::to_string(p));
    });
    EXPECT_EQ(log.count(), 0u) << log.summary();
  }
}

TEST(AllreduceFrontEnd, Fp16CompressionIsExactOnSmallIntegers) {
  for (auto mode : {coll::Compression::fp16, coll::Compression::fp16_fp32acc}) {
    for (const std::string algo : {"ring", "tree", "rhd"}) {
      for (int p : {2, 3, 7}) {
        const auto ref = test::make_reference(DType::f32, ReduceOp::sum, p, 999);
        test::FailureLog log;
        coll::run_threads(p, [&](coll::Communicator& comm) {
          auto in = test::make_input(DType::f32, ReduceOp::sum, comm.rank(), 999);
          auto o = options(algo);
          o.compression = mode;
          o.algo.chunk_elems = 64;
          const auto stats = coll::allreduce(comm, in.data(), in.data(), 999, o);
          if (test::first_mismatch(in.data(), ref.data(), 999, 4) >= 0) log.add(algo + " rank " + std::to_string(comm.rank()));
          if (stats.overflowed()) log.add("spurious overflow");
          if (p > 1 && stats.wire_bytes_sent == 0) log.add("no wire bytes counted");
        });
        EXPECT_EQ(log.count(), 0u) << coll::to_string(mode) << "\n" << log.summary();
      }
    }
  }
}

// Random gradients: the compressed result stays within the fp16 error bound of the exact one
// and every rank holds the same values.
TEST(AllreduceFrontEnd, Fp16CompressionErrorIsBounded) {
  const int p = 5;
  const std::size_t n = 4096;
  std::vector<std::vector<float>> inputs(p, std::vector<float>(n));
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<double> exact(n, 0.0);
  for (auto& v : inputs) {
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = dist(rng);
      exact[i] += v[i];
    }
  }
  for (auto mode : {coll::Compression::fp16, coll::Compression::fp16_fp32acc}) {
    std::vector<std::vector<float>> results(p);
    coll::run_threads(p, [&](coll::Communicator& comm) {
      auto o = options("ring", DType::f32, ReduceOp::sum);
      o.compression = mode;
      results[static_cast<std::size_t>(comm.rank())].resize(n);
      coll::allreduce(comm, inputs[static_cast<std::size_t>(comm.rank())].data(),
                      results[static_cast<std::size_t>(comm.rank())].data(), n, o);
    });
    // Each of the p inputs and each of the p-1 partial sums is rounded once (|x| <= sum |x_r|).
    for (std::size_t i = 0; i < n; ++i) {
      double bound_base = 0;
      for (int r = 0; r < p; ++r) bound_base += std::fabs(inputs[static_cast<std::size_t>(r)][i]);
      EXPECT_LE(std::fabs(results[0][i] - exact[i]), 2.0 * p * coll::kF16UnitRoundoff * bound_base + 1e-7) << i;
      for (int r = 1; r < p; ++r) ASSERT_EQ(results[static_cast<std::size_t>(r)][i], results[0][i]) << i;
    }
  }
}

TEST(AllreduceFrontEnd, Fp16OverflowIsReportedOrAnError) {
  coll::run_threads(2, [&](coll::Communicator& comm) {
    std::vector<float> x{60000.0f, 1.0f, comm.rank() == 0 ? 70000.0f : 1.0f};
    auto o = options("ring");
    o.compression = coll::Compression::fp16;
    auto stats = coll::allreduce(comm, x.data(), x.data(), 3, o);
    EXPECT_EQ(stats.input_overflows, comm.rank() == 0 ? 1u : 0u);
    EXPECT_EQ(stats.result_overflows, 2u);  // 120000 and inf + 1
    EXPECT_TRUE(std::isinf(x[0]));
    EXPECT_EQ(x[1], 2.0f);
    o.overflow = coll::OverflowPolicy::error;
    std::vector<float> y{60000.0f};
    EXPECT_THROW(coll::allreduce(comm, y.data(), y.data(), 1, o), Error);
    o.prescale = 0.5;  // the documented remedy
    y = {60000.0f};
    stats = coll::allreduce(comm, y.data(), y.data(), 1, o);
    EXPECT_EQ(y[0], 60000.0f);
  });
}

TEST(AllreduceFrontEnd, BadInputIsAClearError) {
  coll::run_threads(3, [&](coll::Communicator& comm) {
    std::vector<float> x(64);
    EXPECT_THROW(coll::allreduce(comm, x.data(), x.data(), 64, options("no_such_algorithm")), Error);
    EXPECT_THROW(coll::allreduce(comm, x.data(), x.data() + 1, 32, options("ring")), Error);  // overlap
    EXPECT_THROW(coll::allreduce(comm, nullptr, x.data(), 8, options("ring")), Error);
    EXPECT_THROW(coll::allreduce(comm, x.data(), x.data(), SIZE_MAX / 2, options("ring")), Error);  // overflows
    EXPECT_THROW(coll::allreduce(comm, x.data(), x.data(), 8, options("allgather_ring")), Error);
    auto o = options("ring", DType::i32);
    o.compression = coll::Compression::fp16;
    EXPECT_THROW(coll::allreduce(comm, x.data(), x.data(), 8, o), Error);
    o = options("ring");
    o.timeout_s = 0;
    EXPECT_THROW(coll::allreduce(comm, x.data(), x.data(), 8, o), Error);
    // hierarchical needs hosts of equal size: three ranks on hosts {0,0,1} do not qualify.
  });
  coll::run_threads(RankLayout({0, 0, 1}), [&](coll::Communicator& comm) {
    std::vector<float> x(8);
    EXPECT_THROW(coll::allreduce(comm, x.data(), x.data(), 8, options("hierarchical")), Error);
  });
  EXPECT_THROW(coll::parse_compression("zip"), Error);
  EXPECT_EQ(coll::parse_compression("fp16_fp32acc"), coll::Compression::fp16_fp32acc);
}

}  // namespace
}  // namespace colltune
