// The bench's checked inputs reduce exactly in any order at every rank count it allows: every
// dtype x op is reduced on the host in three orders (ascending ranks, descending ranks, a
// pairwise tree) at the largest MPI and threads rank counts and at odd counts, and compared
// bit-for-bit with fill_reference(). Then the real threads bench at the threads limit.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "bench_detail.hpp"
#include "colltune/bench/bench.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/collectives/threads.hpp"
#include "colltune/common/limits.hpp"

namespace colltune {
namespace {

using Bytes = std::vector<std::byte>;

constexpr coll::DType kDtypes[] = {coll::DType::f32, coll::DType::f64, coll::DType::f16,
                                   coll::DType::bf16, coll::DType::i32, coll::DType::i64};
constexpr coll::ReduceOp kOps[] = {coll::ReduceOp::sum, coll::ReduceOp::avg, coll::ReduceOp::min,
                                   coll::ReduceOp::max, coll::ReduceOp::prod};

// Every rank's input for `count` elements.
std::vector<Bytes> inputs(const bench::BenchConfig& c, int p, std::size_t count) {
  std::vector<Bytes> in(static_cast<std::size_t>(p), Bytes(count * coll::dtype_size(c.dtype)));
  for (int r = 0; r < p; ++r) bench::detail::fill_input(c, r, p, in[static_cast<std::size_t>(r)].data(), count);
  return in;
}

Bytes sequential(const bench::BenchConfig& c, const std::vector<Bytes>& in, bool ascending, std::size_t count) {
  const std::size_t p = in.size();
  Bytes acc = in[ascending ? 0 : p - 1];
  for (std::size_t k = 1; k < p; ++k) coll::reduce(c.dtype, c.op, acc.data(), in[ascending ? k : p - 1 - k].data(), count);
  return acc;
}

// Pairwise: ranks r and r + step combine, step doubling, as a binomial tree reduces.
Bytes tree(const bench::BenchConfig& c, std::vector<Bytes> in, std::size_t count) {
  for (std::size_t step = 1; step < in.size(); step *= 2)
    for (std::size_t r = 0; r + step < in.size(); r += 2 * step) coll::reduce(c.dtype, c.op, in[r].data(), in[r + step].data(), count);
  return in[0];
}

void expect_exact(coll::DType dtype, coll::ReduceOp op, int p) {
  bench::BenchConfig c;
  c.dtype = dtype;
  c.op = op;
  const std::size_t count = 91;  // every residue of a (13) and s (7), several windows
  const std::size_t bytes = count * coll::dtype_size(dtype);
  Bytes ref(bytes);
  bench::detail::fill_reference(c, p, ref.data(), count);
  const std::vector<Bytes> in = inputs(c, p, count);
  const double post = coll::post_scale_factor(op, p);
  const char* names[] = {"ascending", "descending", "tree"};
  Bytes got[] = {sequential(c, in, true, count), sequential(c, in, false, count), tree(c, in, count)};
  for (int order = 0; order < 3; ++order) {
    if (post != 1.0) coll::scale(dtype, got[order].data(), count, post);
    EXPECT_EQ(std::memcmp(got[order].data(), ref.data(), bytes), 0)
        << coll::to_string(dtype) << " " << coll::to_string(op) << " p=" << p << " order " << names[order];
  }
}

TEST(BenchInputs, ExactInEveryOrderAtTheLargestAndOddRankCounts) {
  for (const int p : {limits::kMaxBenchRanks, limits::kMaxThreadRanks, 2, 3, 31, 33, 47, 49, 63, 65, 257, 1023})
    for (const coll::DType dtype : kDtypes)
      for (const coll::ReduceOp op : kOps) expect_exact(dtype, op, p);
}

// Every rank still contributes: with windows narrower than p, each rank is in some element's
// window (an allreduce that dropped a rank would be caught).
TEST(BenchInputs, EveryRankContributesToSomeElement) {
  bench::BenchConfig c;
  c.dtype = coll::DType::bf16;
  const int p = 100;
  const std::size_t count = 100;
  const std::vector<Bytes> in = inputs(c, p, count);
  const Bytes zero(count * 2);
  for (int r = 0; r < p; ++r) EXPECT_NE(in[static_cast<std::size_t>(r)], zero) << r;
  EXPECT_EQ(bench::detail::exact_window(c, p), 32u);
  c.compression = coll::Compression::fp16;
  c.dtype = coll::DType::f32;
  EXPECT_EQ(bench::detail::exact_window(c, 1000), 256u);  // fp16 on the wire
}

// The real threads bench at its rank limit: every dtype x op, checked, in one world of 1,024
// threads (the sweep of each configuration as the bench runs it; a tree, so it stays quick).
TEST(BenchInputs, ThreadsBenchAtTheRankLimitIsRight) {
  std::vector<bench::BenchConfig> configs;
  for (const coll::DType dtype : kDtypes)
    for (const coll::ReduceOp op : kOps) {
      bench::BenchConfig c;
      c.ranks = limits::kMaxThreadRanks;
      c.algorithms = {"tree"};
      c.dtype = dtype;
      c.op = op;
      c.min_bytes = c.max_bytes = 4096;
      c.iters = 1;
      c.warmup = 0;
      c.measure_memcpy = false;
      bench::validate_config(c, c.ranks);
      configs.push_back(c);
    }
  std::vector<long long> wrong(configs.size(), -1);
  coll::run_threads(limits::kMaxThreadRanks, [&](coll::Communicator& comm) {
    for (std::size_t k = 0; k < configs.size(); ++k) {
      const auto rows = bench::run_sweep(comm, configs[k], bench::registry_runners(configs[k]), nullptr);
      if (comm.rank() == 0) wrong[k] = rows.at(0).out_of_place.wrong + rows.at(0).in_place.wrong;
    }
  });
  for (std::size_t k = 0; k < configs.size(); ++k)
    EXPECT_EQ(wrong[k], 0) << coll::to_string(configs[k].dtype) << " " << coll::to_string(configs[k].op);
}

}  // namespace
}  // namespace colltune
