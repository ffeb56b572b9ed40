// nccl-tests style table and the JSON report (docs/bench.md). The table has nccl-tests'
// all_reduce_perf columns, with the algorithm in place of the root: size, count, type, redop,
// algo, then time, algbw, busbw and #wrong out of place and again in place. The footer has the
// "Out of bounds values" line when checking and one "Avg bus bandwidth" line per algorithm.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "colltune/common/finite.hpp"
#include "colltune/bench/bench.hpp"
#include "colltune/common/units.hpp"

namespace colltune::bench {
namespace {

std::string printf_string(const char* format, auto... args) {
  char line[768];
  std::snprintf(line, sizeof line, format, args...);
  return line;
}

std::string algorithm_list(const BenchConfig& config) {
  std::string list;
  for (const auto& a : config.algorithms) list += (list.empty() ? "" : ",") + a;
  return list;
}

// One measurement's four columns.
std::string timing_columns(const BenchTiming& t) {
  const std::string wrong = t.wrong < 0 ? "N/A" : std::to_string(t.wrong);
  return printf_string(" %9.2f %7.2f %7.2f %7s", t.time_us, t.algbw_gbps, t.busbw_gbps, wrong.c_str());
}

nlohmann::json timing_json(const BenchTiming& t) {
  return {{"time_us", t.time_us},
          {"algbw_gbps", t.algbw_gbps},
          {"busbw_gbps", t.busbw_gbps},
          {"wrong", t.wrong < 0 ? nlohmann::json(nullptr) : nlohmann::json(t.wrong)}};
}

std::string describe_run(const BenchReport& report) {
  const BenchConfig& c = report.config;
  std::string text = "# colltune bench: allreduce, transport " + std::string(to_string(c.transport)) + ", " +
                     std::to_string(report.nranks) + " ranks on " + std::to_string(report.nhosts) + " host(s)\n";
  if (!report.device.empty()) text += "# device " + report.device + "\n";
  text += "# algorithms " + algorithm_list(c) + ", iters " + std::to_string(c.iters) + ", warmup " +
          std::to_string(c.warmup) + ", check " + (c.check ? "1" : "0") + ", compression " +
          std::string(coll::to_string(c.compression)) + "\n";
  if (report.memcpy_gbps > 0) {
    text += printf_string("# copy bandwidth (%s, %s): %.2f GB/s\n", report.memcpy_kind.c_str(),
                          format_bytes(c.max_bytes).c_str(), report.memcpy_gbps);
  }
  return text;
}

// `label` centred in `width` columns.
std::string centred(const std::string& label, std::size_t width) {
  if (label.size() >= width) return label;
  const std::size_t left = (width - label.size()) / 2;
  return std::string(left, ' ') + label + std::string(width - label.size() - left, ' ');
}

}  // namespace

std::string table_header(const BenchReport& report) {
  std::string text = describe_run(report) + "#\n";
  constexpr std::size_t kGroup = 34;  // one measurement's columns: " %9s %7s %7s %7s"
  text += printf_string("# %10s %12s %8s %6s %20s %s%s\n", "", "", "", "", "", centred("out-of-place", kGroup).c_str(),
                        centred("in-place", kGroup).c_str());
  text += printf_string("# %10s %12s %8s %6s %20s %9s %7s %7s %7s %9s %7s %7s %7s\n", "size", "count", "type",
                        "redop", "algo", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  text += printf_string("# %10s %12s %8s %6s %20s %9s %7s %7s %7s %9s %7s %7s %7s\n", "(B)", "(elements)", "", "", "",
                        "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return text;
}

std::string table_row(const BenchRow& row, const BenchConfig& config) {
  const std::string type(coll::to_string(config.dtype));
  const std::string redop(coll::to_string(config.op));
  const std::string lead = printf_string("  %10zu %12zu %8s %6s %20s", row.bytes, row.count, type.c_str(),
                                         redop.c_str(), row.algorithm.c_str());
  if (!row.not_applicable.empty()) return lead + "  not applicable: " + row.not_applicable + "\n";
  return lead + timing_columns(row.out_of_place) + timing_columns(row.in_place) + "\n";
}

std::string table_footer(const BenchReport& report) {
  std::string text;
  if (report.config.check) {
    const long long wrong = report.total_wrong();
    text += "# Out of bounds values : " + std::to_string(wrong) + (wrong == 0 ? " OK\n" : " FAILED\n");
  }
  for (const std::string& algorithm : report.config.algorithms) {
    text += printf_string("# Avg bus bandwidth (%s) : %.4f\n", algorithm.c_str(), report.avg_busbw_gbps(algorithm));
  }
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
      r["out_of_place"] = timing_json(row.out_of_place);
      r["in_place"] = timing_json(row.in_place);
    }
    rows.push_back(std::move(r));
  }
  nlohmann::json avg = nlohmann::json::object();
  for (const std::string& algorithm : c.algorithms) avg[algorithm] = report.avg_busbw_gbps(algorithm);
  const auto or_null = [](bool present, auto value) { return present ? nlohmann::json(value) : nlohmann::json(nullptr); };
  nlohmann::json j{{"format", "colltune-bench"},
                   {"version", 2},
                   {"collective", "allreduce"},
                   {"transport", to_string(c.transport)},
                   {"nranks", report.nranks},
                   {"nhosts", report.nhosts},
                   {"device", or_null(!report.device.empty(), report.device)},
                   {"type", coll::to_string(c.dtype)},
                   {"redop", coll::to_string(c.op)},
                   {"compression", coll::to_string(c.compression)},
                   {"iters", c.iters},
                   {"warmup", c.warmup},
                   {"check", c.check},
                   {"chunk_elems", c.algo.chunk_elems},
                   {"memcpy_gbps", or_null(report.memcpy_gbps > 0, report.memcpy_gbps)},
                   {"memcpy_kind", or_null(report.memcpy_gbps > 0, report.memcpy_kind)},
                   {"avg_busbw_gbps", avg},
                   {"wrong", or_null(c.check, report.total_wrong())},
                   {"rows", rows}};
  return finite::json_text(j, 2, "bench --json") + "\n";
}

}  // namespace colltune::bench
