// The bench library: configuration checks, the size sweep, a small checked run over threads
// and its JSON report.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "colltune/bench/bench.hpp"
#include "colltune/collectives/threads.hpp"
#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"

namespace colltune {
namespace {

bench::BenchConfig small_config() {
  bench::BenchConfig c;
  c.ranks = 3;
  c.min_bytes = 4;
  c.max_bytes = 4096;
  c.factor = 4;
  c.iters = 2;
  c.warmup = 1;
  c.measure_memcpy = false;
  return c;
}

TEST(Bench, SweepSizesAreWholeElementsFromMinToMax) {
  auto c = small_config();
  c.min_bytes = 6;
  c.max_bytes = 100;
  c.factor = 2;
  EXPECT_EQ(bench::sweep_sizes(c), (std::vector<std::size_t>{4, 12, 24, 48, 96}));
  c.min_bytes = 0;
  c.max_bytes = 8;
  EXPECT_EQ(bench::sweep_sizes(c), (std::vector<std::size_t>{0, 4, 8}));
  EXPECT_DOUBLE_EQ(bench::allreduce_busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(bench::allreduce_busbw_factor(1), 0.0);
}

TEST(Bench, BadConfigurationsAreErrors) {
  auto c = small_config();
  EXPECT_NO_THROW(bench::validate_config(c, 3));
  EXPECT_THROW(bench::validate_config(c, 0), Error);
  auto d = c;
  d.min_bytes = 8192;
  EXPECT_THROW(bench::validate_config(d, 3), Error);
  d = c;
  d.factor = 1;
  EXPECT_THROW(bench::validate_config(d, 3), Error);
  d = c;
  d.algorithms = {"ring", "bogus"};
  EXPECT_THROW(bench::validate_config(d, 3), Error);
  d = c;
  d.algorithms = {"mpi"};
  EXPECT_THROW(bench::validate_config(d, 3), Error);  // needs the MPI transport
  d = c;
  d.max_bytes = std::size_t{1} << 62;
  EXPECT_THROW(bench::validate_config(d, 3), Error);  // beyond memory
  d = c;
  d.dtype = coll::DType::i32;
  d.compression = coll::Compression::fp16;
  EXPECT_THROW(bench::validate_config(d, 3), Error);
  EXPECT_THROW(bench::parse_transport("carrier-pigeon"), Error);
}

TEST(Bench, CheckedThreadsRunFindsNoWrongElementsAndWritesJson) {
  const auto dir = std::filesystem::temp_directory_path() / ("colltune_bench_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto c = small_config();
  c.algorithms = {"ring", "tree", "rhd"};
  c.op = coll::ReduceOp::avg;
  c.json_path = (dir / "bench.json").string();
  std::ostringstream out;
  const auto report = bench::run_threads_bench(c, &out);
  EXPECT_EQ(report.rows.size(), 3u * bench::sweep_sizes(c).size());
  EXPECT_EQ(report.total_wrong(), 0);
  for (const auto& row : report.rows) {
    if (!row.not_applicable.empty()) continue;
    for (const auto* t : {&row.out_of_place, &row.in_place}) {
      EXPECT_EQ(t->wrong, 0) << row.algorithm << " " << row.bytes;
      EXPECT_GT(t->time_us, 0.0);
      EXPECT_NEAR(t->busbw_gbps, t->algbw_gbps * 4.0 / 3.0, 1e-9);
    }
  }
  EXPECT_NE(out.str().find("# Avg bus bandwidth (ring) : "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("# Avg bus bandwidth (rhd) : "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Out of bounds values : 0 OK"), std::string::npos) << out.str();
  const auto json = nlohmann::json::parse(read_file(c.json_path));
  EXPECT_EQ(json["version"], 2);
  EXPECT_EQ(json["nranks"], 3);
  EXPECT_EQ(json["rows"].size(), report.rows.size());
  EXPECT_EQ(json["wrong"], 0);
  EXPECT_DOUBLE_EQ(json["avg_busbw_gbps"]["tree"].get<double>(), report.avg_busbw_gbps("tree"));
  std::filesystem::remove_all(dir);
}

TEST(Bench, CompressedAndEveryDtypeRunsAreChecked) {
  for (auto dtype : {coll::DType::f64, coll::DType::f16, coll::DType::bf16, coll::DType::i64}) {
    for (auto op : {coll::ReduceOp::sum, coll::ReduceOp::prod, coll::ReduceOp::min}) {
      auto c = small_config();
      c.ranks = 17;
      c.max_bytes = 1024;
      c.dtype = dtype;
      c.op = op;
      const auto report = bench::run_threads_bench(c, nullptr);
      EXPECT_EQ(report.total_wrong(), 0) << coll::to_string(dtype);
      for (const auto& row : report.rows) {
        if (row.not_applicable.empty()) {  // every applicable row was checked, and found right
          EXPECT_EQ(row.out_of_place.wrong, 0) << coll::to_string(dtype) << " " << row.bytes;
          EXPECT_EQ(row.in_place.wrong, 0) << coll::to_string(dtype) << " " << row.bytes << " in place";
        }
      }
    }
  }
  auto c = small_config();
  c.compression = coll::Compression::fp16_fp32acc;
  c.op = coll::ReduceOp::avg;
  EXPECT_EQ(bench::run_threads_bench(c, nullptr).total_wrong(), 0);
}

// The check must be able to fail: a runner that returns its input unreduced is caught on every
// non-empty size, out of place and in place (each rank's input differs from the allreduce for
// p = 3).
TEST(Bench, CheckCountsWrongElementsOfABrokenRunner) {
  auto c = small_config();
  c.algorithms = {"ring"};
  const bench::RunnerFactory broken = [](coll::Communicator&, const std::string&) -> bench::AllreduceRunner {
    return [](const void* in, void* out, std::size_t count) { std::memmove(out, in, count * sizeof(float)); };
  };
  std::vector<bench::BenchRow> rows;
  coll::run_threads(c.ranks, [&](coll::Communicator& comm) {
    auto mine = bench::run_sweep(comm, c, broken, nullptr);
    if (comm.rank() == 0) rows = std::move(mine);
  });
  ASSERT_EQ(rows.size(), bench::sweep_sizes(c).size());
  for (const auto& row : rows) {
    if (row.count > 0) {
      EXPECT_GT(row.out_of_place.wrong, 0) << row.bytes;
      EXPECT_GT(row.in_place.wrong, 0) << row.bytes;
    }
  }
}

}  // namespace
}  // namespace colltune
