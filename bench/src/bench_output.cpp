// nccl-tests style table and the JSON report.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "colltune/bench/bench.hpp"
#include "colltune/common/units.hpp"

namespace colltune::bench {
namespace {

std::string printf_string(const char* format, auto... args) {
  char line[512];
  std::snprintf(line, sizeof line, format, args...);
  return line;
}

std::string algorithm_list(const BenchConfig& config) {
  std::string list;
  for (const auto& a : config.algorithms) list += (list.empty() ? "" : ",") + a;
  return list;
}

}  // namespace

std::string table_header(const BenchReport& report) {
  const BenchConfig& c = report.config;
  std::string text = "# colltune bench: allreduce, transport " + std::string(to_string(c.transport)) + ", " +
                     std::to_string(report.nranks) + " ranks on " + std::to_string(report.nhosts) + " host(s)\n";
  text += "# algorithms " + algorithm_list(c) + ", iters " + std::to_string(c.iters) + ", warmup " +
          std::to_string(c.warmup) + ", check " + (c.check ? "1" : "0") + ", compression " +
          std::string(coll::to_string(c.compression)) + "\n";
  if (report.memcpy_gbps > 0) {
    text += printf_string("# memcpy bandwidth (1 thread, %s): %.2f GB/s\n", format_bytes(c.max_bytes).c_str(),
                          report.memcpy_gbps);
  }
  text += "#\n";
  text += printf_string("# %10s %12s %8s %6s %14s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "algo", "time",
                        "algbw", "busbw", "#wrong");
  text += printf_string("# %10s %12s %8s %6s %14s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                        "(GB/s)", "");
  return text;
}

std::string table_row(const BenchRow& row, const BenchConfig& config) {
  const std::string type(coll::to_string(config.dtype));
  const std::string redop(coll::to_string(config.op));
  if (!row.not_applicable.empty()) {
    return printf_string("  %10zu %12zu %8s %6s %14s  not applicable: %s\n", row.bytes, row.count, type.c_str(),
                         redop.c_str(), row.algorithm.c_str(), row.not_applicable.c_str());
  }
  const std::string wrong = row.wrong < 0 ? "N/A" : std::to_string(row.wrong);
  return printf_string("  %10zu %12zu %8s %6s %14s %10.2f %8.2f %8.2f %7s\n", row.bytes, row.count, type.c_str(),
                       redop.c_str(), row.algorithm.c_str(), row.time_us, row.algbw_gbps, row.busbw_gbps, wrong.c_str());
}

std::string table_footer(const BenchReport& report) {
  std::string text;
  if (report.config.check) {
    const long long wrong = report.total_wrong();
    text += "# Out of bounds values : " + std::to_string(wrong) + (wrong == 0 ? " OK\n" : " FAILED\n");
  }
  text += printf_string("# Avg bus bandwidth    : %.4f\n", report.avg_busbw_gbps());
  return text;
}

std::string report_json(const BenchReport& report) {
  const BenchConfig& c = report.config;
  nlohmann::json rows = nlohmann::json::array();
  for (const BenchRow& row : report.rows) {
    nlohmann::json r{{"algorithm", row.algorithm}, {"size_bytes", row.bytes}, {"count", row.count}};
    if (!row.not_applicable.empty()) {
      r["not_applicable"] = row.not_applicable;
    } else {
      r["time_us"] = row.time_us;
      r["algbw_gbps"] = row.algbw_gbps;
      r["busbw_gbps"] = row.busbw_gbps;
      r["wrong"] = row.wrong < 0 ? nlohmann::json(nullptr) : nlohmann::json(row.wrong);
    }
    rows.push_back(std::move(r));
  }
  nlohmann::json j{{"format", "colltune-bench"},
                   {"version", 1},
                   {"collective", "allreduce"},
                   {"transport", to_string(c.transport)},
                   {"nranks", report.nranks},
                   {"nhosts", report.nhosts},
                   {"type", coll::to_string(c.dtype)},
                   {"redop", coll::to_string(c.op)},
                   {"compression", coll::to_string(c.compression)},
                   {"iters", c.iters},
                   {"warmup", c.warmup},
                   {"check", c.check},
                   {"chunk_elems", c.algo.chunk_elems},
                   {"memcpy_gbps", report.memcpy_gbps > 0 ? nlohmann::json(report.memcpy_gbps) : nlohmann::json(nullptr)},
                   {"avg_busbw_gbps", report.avg_busbw_gbps()},
                   {"wrong", c.check ? nlohmann::json(report.total_wrong()) : nlohmann::json(nullptr)},
                   {"rows", rows}};
  return j.dump(2) + "\n";
}

}  // namespace colltune::bench
