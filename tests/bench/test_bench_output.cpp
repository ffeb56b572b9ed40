// The bench's output as nccl-tests users read it: out-of-place and in-place columns, the
// "Out of bounds values" line when checking, one "Avg bus bandwidth" line per algorithm, and a
// JSON report that says what the table says.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "colltune/bench/bench.hpp"
#include "colltune/common/atomic_file.hpp"

namespace colltune {
namespace {

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> t;
  for (std::string w; in >> w;) t.push_back(w);
  return t;
}

std::vector<std::string> lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bench::BenchRow measured_row(const std::string& algo, std::size_t bytes, double oop_busbw, double ip_busbw,
                             long long wrong) {
  bench::BenchRow row;
  row.algorithm = algo;
  row.bytes = bytes;
  row.count = bytes / 4;
  row.out_of_place = {12.5, 1.25, oop_busbw, wrong};
  row.in_place = {10.0, 1.5, ip_busbw, wrong};
  return row;
}

bench::BenchReport sample_report(bool check) {
  bench::BenchReport r;
  r.config.algorithms = {"ring", "tree"};
  r.config.check = check;
  r.nranks = 4;
  r.nhosts = 1;
  r.rows = {measured_row("ring", 1024, 2.0, 4.0, check ? 0 : -1), measured_row("tree", 1024, 1.0, 1.0, check ? 0 : -1),
            measured_row("ring", 4096, 6.0, 8.0, check ? 0 : -1)};
  r.rows.push_back(bench::BenchRow{"tree", 4096, 1024, {}, {}, "needs a power of two"});
  return r;
}

TEST(BenchOutput, TableHasOutOfPlaceAndInPlaceColumns) {
  const bench::BenchReport r = sample_report(true);
  const auto head = lines(bench::table_header(r));
  ASSERT_GE(head.size(), 3u);
  const std::string& groups = head[head.size() - 3];
  const auto out_pos = groups.find("out-of-place"), in_pos = groups.find("in-place");
  ASSERT_NE(out_pos, std::string::npos) << groups;
  ASSERT_NE(in_pos, std::string::npos) << groups;
  EXPECT_LT(out_pos, in_pos);
  EXPECT_EQ(tokens(head[head.size() - 2]),
            (std::vector<std::string>{"#", "size", "count", "type", "redop", "algo", "time", "algbw", "busbw", "#wrong",
                                      "time", "algbw", "busbw", "#wrong"}));
  // The group labels sit over their columns: "out-of-place" ends before the in-place time column.
  const std::string& names = head[head.size() - 2];
  const auto second_time = names.find("time", names.find("#wrong"));
  EXPECT_LT(out_pos + 12, second_time);
  EXPECT_GT(in_pos, names.find("#wrong"));
  EXPECT_EQ(tokens(bench::table_row(r.rows[0], r.config)),
            (std::vector<std::string>{"1024", "256", "float", "sum", "ring", "12.50", "1.25", "2.00", "0", "10.00",
                                      "1.50", "4.00", "0"}));
  EXPECT_NE(bench::table_row(r.rows[3], r.config).find("not applicable: needs a power of two"), std::string::npos);
  const bench::BenchReport unchecked = sample_report(false);
  const auto t = tokens(bench::table_row(unchecked.rows[0], unchecked.config));
  EXPECT_EQ(t[8], "N/A");
  EXPECT_EQ(t[12], "N/A");
}

TEST(BenchOutput, FooterHasOutOfBoundsAndOneAverageLinePerAlgorithm) {
  bench::BenchReport r = sample_report(true);
  // nccl-tests' average: busbw over both measurements of every row that ran.
  EXPECT_DOUBLE_EQ(r.avg_busbw_gbps("ring"), (2.0 + 4.0 + 6.0 + 8.0) / 4);
  EXPECT_DOUBLE_EQ(r.avg_busbw_gbps("tree"), 1.0);
  EXPECT_EQ(lines(bench::table_footer(r)),
            (std::vector<std::string>{"# Out of bounds values : 0 OK", "# Avg bus bandwidth (ring) : 5.0000",
                                      "# Avg bus bandwidth (tree) : 1.0000"}));
  r.rows[1].in_place.wrong = 3;
  r.rows[2].out_of_place.wrong = 2;
  EXPECT_EQ(r.total_wrong(), 5);
  EXPECT_EQ(lines(bench::table_footer(r))[0], "# Out of bounds values : 5 FAILED");
  const bench::BenchReport unchecked = sample_report(false);
  EXPECT_EQ(bench::table_footer(unchecked).find("Out of bounds"), std::string::npos);
}

// Every number of every table row equals the JSON's, as printed (two decimals).
TEST(BenchOutput, JsonSaysWhatTheTableSays) {
  const auto dir = std::filesystem::temp_directory_path() / ("colltune_bench_output_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  bench::BenchConfig c;
  c.ranks = 4;
  c.algorithms = {"ring", "rhd"};
  c.min_bytes = 64;
  c.max_bytes = 16384;
  c.factor = 16;
  c.iters = 2;
  c.warmup = 1;
  c.measure_memcpy = false;
  c.json_path = (dir / "b.json").string();
  std::ostringstream out;
  const auto report = bench::run_threads_bench(c, &out);
  const auto json = nlohmann::json::parse(read_file(c.json_path));
  std::size_t row = 0;
  auto two = [](const nlohmann::json& v) {
    char s[64];
    std::snprintf(s, sizeof s, "%.2f", v.get<double>());
    return std::string(s);
  };
  for (const std::string& line : lines(out.str())) {
    if (line.empty() || line[0] == '#') continue;
    ASSERT_LT(row, json["rows"].size());
    const auto& j = json["rows"][row++];
    const auto t = tokens(line);
    ASSERT_EQ(t.size(), 13u) << line;
    EXPECT_EQ(t[0], std::to_string(j["size_bytes"].get<std::size_t>()));
    EXPECT_EQ(t[4], j["algorithm"].get<std::string>());
    std::size_t col = 5;
    for (const char* part : {"out_of_place", "in_place"}) {
      EXPECT_EQ(t[col++], two(j[part]["time_us"])) << line;
      EXPECT_EQ(t[col++], two(j[part]["algbw_gbps"])) << line;
      EXPECT_EQ(t[col++], two(j[part]["busbw_gbps"])) << line;
      EXPECT_EQ(t[col++], std::to_string(j[part]["wrong"].get<long long>())) << line;
    }
  }
  EXPECT_EQ(row, json["rows"].size());
  EXPECT_EQ(row, report.rows.size());
  for (const std::string algo : {"ring", "rhd"}) {
    char expect[128];
    std::snprintf(expect, sizeof expect, "# Avg bus bandwidth (%s) : %.4f", algo.c_str(),
                  json["avg_busbw_gbps"][algo].get<double>());
    EXPECT_NE(out.str().find(expect), std::string::npos) << expect << "\n" << out.str();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace colltune
