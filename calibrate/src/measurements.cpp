#include "colltune/calibrate/measurements.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "colltune/collectives/dtype.hpp"
#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/text.hpp"
#include "colltune/common/json_input.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/sim/timeline.hpp"

namespace colltune::tuner {
namespace {

using nlohmann::json;

// A whole token as a number (common/parse.hpp's grammar); nullopt for "N/A", "-", text.
std::optional<double> number(const std::string& token) { return parse::try_number(token); }

// Element sizes of the types nccl-tests prints (its test_typenames).
std::optional<std::size_t> nccl_tests_type_size(const std::string& name) {
  static const std::map<std::string, std::size_t> sizes{
      {"int8", 1},  {"uint8", 1},  {"int32", 4},    {"uint32", 4},  {"int64", 8}, {"uint64", 8},
      {"half", 2},  {"float", 4},  {"double", 8},   {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1},
      {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
  const auto it = sizes.find(name);
  if (it == sizes.end()) return std::nullopt;
  return it->second;
}

// ---- nccl-tests ---------------------------------------------------------------------------

// The label a launcher puts before each line of a rank's output: srun --label (" 0: ") and
// mpirun --tag-output ("[1,0]<stdout>:").
// std::regex (libstdc++) recurses once per character a repetition matches, so a long enough
// run (a 100 kB host name, digits or NCCL_ALGO value) overflows the stack: each pattern below is
// matched on a bounded window of the line, one longer than any real label, host name or setting.
constexpr std::size_t kLabelWindow = 64;
constexpr std::size_t kSettingWindow = 512;

// Searches `pattern` in the `window` characters of `line` from `from`; the match's groups are
// copied out (they must not point into a temporary).
std::optional<std::vector<std::string>> search_window(const std::string& line, const std::regex& pattern,
                                                      std::size_t from, std::size_t window) {
  if (from >= line.size()) return std::nullopt;
  const std::string text = line.substr(from, window);
  std::smatch m;
  if (!std::regex_search(text, m, pattern)) return std::nullopt;
  std::vector<std::string> groups;
  for (const auto& g : m) groups.push_back(g.str());
  return groups;
}

std::string without_launcher_prefix(const std::string& line) {
  static const std::regex prefix(R"(^\s*(\d+:|\[\d+,\d+\]<std(out|err)>:)\s?)");
  const auto m = search_window(line, prefix, 0, kLabelWindow);
  return m ? line.substr(m->front().size()) : line;
}

// The table's columns, from its "#  size  count  type  redop  root  time  algbw ..." line:
// leading columns that describe the row, then one or two measurements (out of place, in
// place) of time, algbw, busbw and a correctness column (#wrong, or "error" before 2.13).
struct NcclTestsColumns {
  std::vector<std::string> leading;  // size, count, type, redop, root: those present
  int groups = 0;                    // measurements per row (1 or 2)
  int group_width = 0;               // 3 (no correctness column) or 4
  std::size_t width() const { return leading.size() + static_cast<std::size_t>(groups * group_width); }
  int index(const std::string& name) const {
    const auto it = std::find(leading.begin(), leading.end(), name);
    return it == leading.end() ? -1 : static_cast<int>(it - leading.begin());
  }
};

bool is_column_header(const std::vector<std::string>& t) {
  return std::find(t.begin(), t.end(), "size") != t.end() && std::find(t.begin(), t.end(), "busbw") != t.end() &&
         std::find(t.begin(), t.end(), "time") != t.end();
}

NcclTestsColumns parse_columns(std::vector<std::string> t, const std::string& where) {
  if (!t.empty() && t.front() == "#") t.erase(t.begin());
  NcclTestsColumns c;
  static const std::set<std::string> leading{"size", "count", "type", "redop", "root"};
  std::size_t i = 0;
  for (; i < t.size() && leading.count(t[i]); ++i) c.leading.push_back(t[i]);
  if (c.leading.empty() || c.leading.front() != "size")
    throw Error(where + ": nccl-tests columns not recognised: the table must start with 'size' (got '" +
                (t.empty() ? std::string() : t.front()) + "')");
  const std::vector<std::string> rest(t.begin() + static_cast<long>(i), t.end());
  const auto is_group = [&](std::size_t at, int width) {
    if (at + static_cast<std::size_t>(width) > rest.size()) return false;
    if (rest[at] != "time" || rest[at + 1] != "algbw" || rest[at + 2] != "busbw") return false;
    return width == 3 || rest[at + 3] == "#wrong" || rest[at + 3] == "error" || rest[at + 3] == "wrong";
  };
  for (int width : {4, 3}) {
    std::size_t at = 0;
    int groups = 0;
    while (is_group(at, width)) at += static_cast<std::size_t>(width), ++groups;
    if (groups >= 1 && groups <= 2 && at == rest.size()) {
      c.groups = groups;
      c.group_width = width;
      return c;
    }
  }
  std::string shown;
  for (const auto& s : rest) shown += (shown.empty() ? "" : " ") + s;
  throw Error(where + ": nccl-tests columns not recognised after '" + c.leading.back() + "': '" + shown +
              "' (expected one or two groups of 'time algbw busbw [#wrong]')");
}

// What the log's text says about the run besides the table.
struct NcclTestsRun {
  std::set<int> ranks;         // from "#  Rank  3 Group  0 Pid ... on HOST device ..." lines
  std::string binary;          // "all_reduce_perf" from a command line, if any
  std::string algo, proto;     // NCCL_ALGO / NCCL_PROTO, from a command line or NCCL's log
  std::vector<std::string> channels;  // NCCL's channel settings (sim::NcclChannelEnv), "NAME=VALUE"
  std::vector<std::string> unread;  // other NCCL settings, "NAME=VALUE", first value of each name
};

// NCCL settings that change neither what NCCL runs nor how fast: logging, dumps, the
// bootstrap's socket interface and the IB GID index (addressing). Others a log makes are
// listed as unread (MeasurementSet::unread_nccl_env).
bool harmless_nccl_setting(const std::string& name) {
  static const std::set<std::string> names = {
      "NCCL_DEBUG",         "NCCL_DEBUG_SUBSYS",     "NCCL_DEBUG_FILE",         "NCCL_DEBUG_TIMESTAMP_FORMAT",
      "NCCL_TOPO_DUMP_FILE", "NCCL_TOPO_DUMP_FILE_RANK", "NCCL_GRAPH_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE_RANK",
      "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX",     "NCCL_WARN_ENABLE_DEBUG_INFO"};
  return names.count(name) > 0;
}

// Every "NCCL_NAME=VALUE" and "NCCL_NAME set by environment to VALUE" on a line (a command
// line's "-x NCCL_MIN_CTAS=24", an env dump, NCCL's INFO lines), scanned by hand: a log line
// can be long, and these patterns need no regex.
void scan_nccl_settings(const std::string& line, NcclTestsRun& run) {
  static const std::string kSetBy = " set by environment to ";
  const auto is_name_char = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; };
  const auto value_at = [&line](std::size_t at) {
    std::size_t end = at;
    while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end])) && line[end] != '"' &&
           line[end] != '\'' && line[end] != ')')
      ++end;
    while (end > at && (line[end - 1] == ',' || line[end - 1] == ';' || line[end - 1] == '.')) --end;  // prose
    return line.substr(at, end - at);
  };
  for (std::size_t at = line.find("NCCL_"); at != std::string::npos; at = line.find("NCCL_", at + 1)) {
    if (at > 0 && is_name_char(line[at - 1])) continue;  // inside a longer word
    std::size_t end = at + 5;
    while (end < line.size() && is_name_char(line[end])) ++end;
    const std::string name = line.substr(at, end - at);
    std::string value;
    if (end < line.size() && line[end] == '=') value = value_at(end + 1);
    else if (line.compare(end, kSetBy.size(), kSetBy) == 0) value = value_at(end + kSetBy.size());
    if (value.empty() || name == "NCCL_ALGO" || name == "NCCL_PROTO" || harmless_nccl_setting(name)) continue;
    if (name.size() > 8 && name.compare(name.size() - 8, 8, "_DISABLE") == 0 && value == "0") continue;  // NCCL's default
    std::vector<std::string>& list = sim::is_nccl_channel_setting(name) ? run.channels : run.unread;
    const bool seen = std::any_of(list.begin(), list.end(),
                                  [&](const std::string& s) { return s.compare(0, name.size() + 1, name + "=") == 0; });
    if (!seen) list.push_back(name + "=" + value);
  }
}

// The channel settings a log shows (`logged`, "NAME=VALUE"), each replaced by --nccl-env's
// value of that name (hints.nccl_env).
sim::NcclChannelEnv channel_env_of(const std::vector<std::string>& logged, const MeasurementHints& hints,
                                   const std::string& source) {
  sim::NcclChannelEnv env;
  const auto set_all = [&env](const std::vector<std::string>& settings, const std::string& where) {
    for (const std::string& setting : settings) {
      try {
        sim::set_nccl_channel_setting(env, setting);
      } catch (const Error& e) {
        throw Error(where + ": " + e.what());
      }
    }
  };
  set_all(logged, source);
  set_all(hints.nccl_env, "--nccl-env");
  return env;
}

void scan_run_text(const std::string& line, const std::string& where, NcclTestsRun& run) {
  static const std::regex rank_line(R"(^#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+\S+\s+device)");
  static const std::regex binary(R"(\b(all_reduce|reduce_scatter|all_gather|broadcast|reduce|alltoall|sendrecv|gather|scatter|hypercube)_perf\b)");
  static const std::regex algo_env(R"(NCCL_ALGO(?:=|\s+set by environment to\s+)([A-Za-z0-9_^,:;]+))");
  static const std::regex proto_env(R"(NCCL_PROTO(?:=|\s+set by environment to\s+)([A-Za-z0-9_^,:;]+))");
  if (const auto m = search_window(line, rank_line, 0, kSettingWindow)) {
    // Beyond any machine (limits.hpp): a garbled line, not a rank.
    run.ranks.insert(parse::integer<int>((*m)[1], where + ": '#  Rank' line: rank", 0, limits::kMaxTopologyRanks - 1));
  }
  std::smatch m;  // the binary's pattern has no repetition: the whole line is safe
  if (run.binary.empty() && std::regex_search(line, m, binary)) run.binary = m[1].str() + "_perf";
  const auto setting = [&line](const std::regex& pattern, const char* name) -> std::string {
    for (std::size_t at = line.find(name); at != std::string::npos; at = line.find(name, at + 1))
      if (const auto found = search_window(line, pattern, at, kSettingWindow)) return (*found)[1];
    return "";
  };
  if (run.algo.empty()) run.algo = setting(algo_env, "NCCL_ALGO");
  if (run.proto.empty()) run.proto = setting(proto_env, "NCCL_PROTO");
  scan_nccl_settings(line, run);
}

std::optional<coll::Collective> collective_of_binary(const std::string& binary, const std::string& where) {
  if (binary.empty()) return std::nullopt;
  if (binary == "all_reduce_perf") return coll::Collective::allreduce;
  if (binary == "reduce_scatter_perf") return coll::Collective::reduce_scatter;
  if (binary == "all_gather_perf") return coll::Collective::allgather;
  throw Error(where + ": " + binary + " measures a collective colltune does not model (it reads all_reduce_perf, "
              "reduce_scatter_perf and all_gather_perf)");
}

struct RawRow {
  int line = 0;
  std::vector<std::string> t;
};

// busbw / algbw of the largest row: nccl-tests' bus factor, 2(n-1)/n for allreduce and (n-1)/n
// for reduce-scatter and allgather.
std::optional<double> bus_factor(const std::vector<RawRow>& rows, const NcclTestsColumns& c) {
  const std::size_t first = c.leading.size();
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    const auto alg = number(it->t[first + 1]), bus = number(it->t[first + 2]);
    if (alg && bus && *alg > 0 && *bus > 0) return *bus / *alg;
  }
  return std::nullopt;
}

coll::Collective infer_collective(const NcclTestsRun& run, const std::vector<RawRow>& rows,
                                  const NcclTestsColumns& c, const MeasurementHints& hints, const std::string& where) {
  if (!hints.collective.empty()) return parse_collective_name(hints.collective);
  if (auto from_binary = collective_of_binary(run.binary, where)) return *from_binary;
  // No command line: allreduce's bus factor is above 1 from 3 ranks on, the others' below 1.
  const auto factor = bus_factor(rows, c);
  if (!factor || std::abs(*factor - 1.0) < 0.02)
    throw Error(where + ": cannot tell which collective this log measured (no *_perf command line, and busbw/algbw "
                "does not say): pass --collective");
  if (*factor > 1.0) return coll::Collective::allreduce;
  const int redop = c.index("redop");
  if (redop < 0)
    throw Error(where + ": cannot tell reduce_scatter from allgather (no command line, no redop column): "
                "pass --collective");
  return rows.front().t[static_cast<std::size_t>(redop)] == "none" ? coll::Collective::allgather
                                                                   : coll::Collective::reduce_scatter;
}

int infer_ranks(const NcclTestsRun& run, coll::Collective collective, const std::vector<RawRow>& rows,
                const NcclTestsColumns& c, const MeasurementHints& hints, const std::string& where) {
  const int listed = run.ranks.empty() ? 0 : *run.ranks.rbegin() + 1;
  if (hints.nranks > 0 && listed > 0 && listed != hints.nranks)
    throw Error(where + ": the log lists " + std::to_string(listed) + " ranks, --ranks says " +
                std::to_string(hints.nranks));
  if (hints.nranks > 0) return hints.nranks;
  if (listed > 0) return listed;
  // No rank lines: invert the bus factor (rounded: busbw and algbw are printed to 0.01 GB/s).
  const auto factor = bus_factor(rows, c);
  const double per = collective == coll::Collective::allreduce ? 2.0 : 1.0;
  if (factor && *factor < per - 1e-3) {
    const double n = per / (per - *factor);
    if (n >= 1.5 && n < 1e6) return static_cast<int>(std::lround(n));
  }
  throw Error(where + ": cannot tell the rank count (no '#  Rank N ... device' lines): pass --ranks");
}

}  // namespace

coll::Collective parse_collective_name(const std::string& name) {
  for (auto c : {coll::Collective::allreduce, coll::Collective::reduce_scatter, coll::Collective::allgather})
    if (name == coll::to_string(c)) return c;
  if (name == "all_reduce") return coll::Collective::allreduce;
  if (name == "all_gather") return coll::Collective::allgather;
  throw Error("unknown collective '" + name + "' (valid: allreduce, reduce_scatter, allgather)");
}

MeasurementSet parse_nccl_tests_log(const std::string& text, const std::string& source,
                                    const MeasurementHints& hints) {
  const auto lines = text::lines(text);
  NcclTestsRun run;
  std::optional<NcclTestsColumns> columns;
  std::vector<RawRow> rows;
  MeasurementSet set;
  set.files.push_back(source);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = without_launcher_prefix(lines[i]);
    const std::string where = source + ":" + std::to_string(i + 1);
    scan_run_text(line, where, run);
    auto t = text::words(line);
    if (t.empty()) continue;
    if (t.front().front() == '#') {
      if (t.front() != "#") t.front().erase(0, 1);  // "#size" written without a space
      if (is_column_header(t)) columns = parse_columns(t, where);
      continue;
    }
    if (!number(t.front())) continue;  // NCCL INFO lines, prose, prompts
    if (!columns) throw Error(where + ": data row before any nccl-tests column header ('#  size  count  type ...')");
    if (t.size() != columns->width()) {
      set.skipped.push_back(where + ": " + std::to_string(t.size()) + " fields, the header has " +
                            std::to_string(columns->width()));
      continue;
    }
    rows.push_back({static_cast<int>(i + 1), std::move(t)});
  }
  if (!columns) throw Error(source + ": no nccl-tests table (no '#  size  count  type ... time  algbw  busbw' header)");
  if (rows.empty()) throw Error(source + ": the nccl-tests table has no data rows");

  const sim::NcclChannelEnv channels = channel_env_of(run.channels, hints, source);
  const auto collective = infer_collective(run, rows, *columns, hints, source);
  const int nranks = infer_ranks(run, collective, rows, *columns, hints, source);
  const int type_col = columns->index("type");
  const std::size_t first = columns->leading.size();
  for (const RawRow& r : rows) {
    const std::string where = source + ":" + std::to_string(r.line);
    const auto size = number(r.t[0]);
    const auto time = number(r.t[first]);
    if (!size || *size < 0 || !time || *time <= 0) {
      set.skipped.push_back(where + ": no usable size or out-of-place time");
      continue;
    }
    if (*size > static_cast<double>(limits::kMaxBytesPerRank) || *size != std::floor(*size)) {
      set.skipped.push_back(where + ": size " + r.t[0] + " is not a whole number of bytes up to " +
                            std::to_string(limits::kMaxBytesPerRank));
      continue;
    }
    Measurement m;
    m.source = where;
    m.runtime = MeasuredRuntime::nccl;
    m.collective = collective;
    m.algorithm = hints.nccl_algo.empty() ? run.algo : hints.nccl_algo;
    m.protocol = hints.nccl_proto.empty() ? run.proto : hints.nccl_proto;
    m.nccl_channels = channels;
    m.nranks = nranks;
    m.bytes = static_cast<std::size_t>(*size);
    if (type_col >= 0) {
      const auto elem = nccl_tests_type_size(r.t[static_cast<std::size_t>(type_col)]);
      if (!elem) throw Error(where + ": unknown nccl-tests type '" + r.t[static_cast<std::size_t>(type_col)] + "'");
      m.elem_size = *elem;
    }
    m.time_us = *time;
    if (columns->groups == 2)
      if (const auto in_place = number(r.t[first + static_cast<std::size_t>(columns->group_width)]);
          in_place && *in_place > 0)
        m.in_place_time_us = *in_place;
    if (m.bytes == 0) {
      set.skipped.push_back(where + ": size 0 (nothing moved)");
      continue;
    }
    set.rows.push_back(std::move(m));
  }
  if (set.rows.empty()) throw Error(source + ": the nccl-tests table has no usable data rows");
  if (!run.unread.empty()) {
    std::string listed;
    for (const std::string& s : run.unread) listed += (listed.empty() ? "" : ", ") + s;
    set.unread_nccl_env.push_back(source + " sets " + listed);
  }
  return set;
}

// A JSON number that must be a whole number in [lo, hi] (nlohmann's get<int> of 1e300 is
// undefined behaviour, of -1 as size_t a wrap-around).
static double whole_number(const json& value, const std::string& what, double lo, double hi) {
  if (!value.is_number()) throw Error(what + ": expected a number, got " + json_input::shown(value));
  const double v = value.get<double>();
  if (!(v >= lo && v <= hi) || v != std::floor(v))
    throw Error(what + ": expected a whole number from " + json_input::shown(json(lo)) + " to " +
                json_input::shown(json(hi)) + ", got " + json_input::shown(value));
  return v;
}

namespace {

// The fields of a bench report, each named in its message ("FILE: rows[3]: \"time_us\": expected
// a number, got \"fast\"") rather than the JSON library's "cannot use at() with number".
const json& member(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) throw Error(where + ": expected an object, got " + json_input::shown(object));
  const auto it = object.find(key);
  if (it == object.end()) throw Error(where + ": \"" + key + "\" is missing");
  return *it;
}

std::string string_member(const json& object, const char* key, const std::string& where) {
  const json& v = member(object, key, where);
  if (!v.is_string()) throw Error(where + ": \"" + key + "\": expected a string, got " + json_input::shown(v));
  return v.get<std::string>();
}

double number_member(const json& object, const char* key, const std::string& where) {
  const json& v = member(object, key, where);
  if (!v.is_number()) throw Error(where + ": \"" + key + "\": expected a number, got " + json_input::shown(v));
  return v.get<double>();
}

std::size_t bench_elem_size(const json& root, const std::string& source) {
  const std::string type = string_member(root, "type", source);
  try {
    return coll::dtype_size(coll::parse_dtype(type));
  } catch (const Error& e) {
    throw Error(source + ": \"type\": " + e.what());
  }
}

// One row of the report; nullopt (and a note in set.skipped) for a row without a measurement.
std::optional<Measurement> bench_row(const json& r, const std::string& where, MeasurementSet& set) {
  if (r.is_object() && r.contains("not_applicable")) {
    set.skipped.push_back(where + ": not applicable (" + string_member(r, "not_applicable", where) + ")");
    return std::nullopt;
  }
  Measurement m;
  m.source = where;
  m.algorithm = string_member(r, "algorithm", where);
  m.runtime = m.algorithm == "nccl" ? MeasuredRuntime::nccl : MeasuredRuntime::colltune;
  if (m.runtime == MeasuredRuntime::nccl) m.algorithm.clear();  // NCCL chose
  m.bytes = static_cast<std::size_t>(whole_number(member(r, "size_bytes", where), where + ": size_bytes", 0,
                                                  static_cast<double>(limits::kMaxBytesPerRank)));
  m.time_us = number_member(member(r, "out_of_place", where), "time_us", where + ": out_of_place");
  // As in nccl-tests logs: an in-place time is kept only when positive (-1 or 0: not measured).
  if (r.contains("in_place"))
    if (const double in_place = number_member(r["in_place"], "time_us", where + ": in_place"); in_place > 0)
      m.in_place_time_us = in_place;
  if (!(m.time_us > 0) || m.bytes == 0) {
    set.skipped.push_back(where + ": no positive time or size");
    return std::nullopt;
  }
  return m;
}

}  // namespace

MeasurementSet parse_bench_json(const std::string& text, const std::string& source) {
  const json root = json_input::parse(text, source);
  MeasurementSet set;
  set.files.push_back(source);
  try {
    if (!root.is_object() || root.value("format", "") != "colltune-bench")
      throw Error(source + ": not a colltune bench report (\"format\": \"colltune-bench\" missing)");
    const int nranks = static_cast<int>(whole_number(member(root, "nranks", source), source + ": nranks", 1,
                                                     limits::kMaxTopologyRanks));
    const std::size_t elem = bench_elem_size(root, source);
    const std::size_t chunk = root.contains("chunk_elems") && !root["chunk_elems"].is_null()
                                  ? static_cast<std::size_t>(whole_number(root["chunk_elems"], source + ": chunk_elems", 0,
                                                                          static_cast<double>(limits::kMaxBytesPerRank)))
                                  : 0;
    const json& rows = member(root, "rows", source);
    if (!rows.is_array()) throw Error(source + ": \"rows\": expected an array, got " + json_input::shown(rows));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::optional<Measurement> m = bench_row(rows[i], source + ": rows[" + std::to_string(i) + "]", set);
      if (!m) continue;
      m->nranks = nranks;
      m->elem_size = elem;
      m->chunk_elems = chunk;
      set.rows.push_back(std::move(*m));
    }
  } catch (const json::exception& e) {
    json_input::rethrow(e, source, "");
  }
  if (set.rows.empty()) throw Error(source + ": the bench report has no measured rows");
  return set;
}

MeasurementSet parse_horovod_timeline(const std::string& text, const std::string& source,
                                      const MeasurementHints& hints) {
  const sim::TimelineImport timeline = sim::import_horovod_timeline_text(text, source);
  MeasurementSet set;
  set.files.push_back(source);
  std::size_t index = 0;
  for (const sim::TimelineActivity& a : timeline.activities) {
    if (a.name.starts_with("MEMCPY_") && a.end_us > a.start_us) {
      set.fusion_copy_bytes += static_cast<double>(a.bytes);
      set.fusion_copy_us += a.end_us - a.start_us;
    }
    if (a.name != "NCCL_ALLREDUCE") continue;
    ++index;
    const std::string where = source + ": NCCL_ALLREDUCE #" + std::to_string(index);
    if (!(a.end_us > a.start_us) || a.bytes == 0) {
      set.skipped.push_back(where + ": no duration or no bytes");
      continue;
    }
    Measurement m;
    m.source = where;
    m.runtime = MeasuredRuntime::nccl;
    m.algorithm = hints.nccl_algo;
    m.protocol = hints.nccl_proto;
    m.nccl_channels = channel_env_of({}, hints, source);
    m.nranks = hints.nranks;  // a timeline is one rank's view: 0 = the topology's rank count
    m.bytes = a.bytes;
    m.elem_size = a.bytes % 4 == 0 ? 4 : 2;
    m.time_us = a.end_us - a.start_us;
    set.rows.push_back(std::move(m));
  }
  if (set.rows.empty()) throw Error(source + ": the Horovod timeline has no NCCL_ALLREDUCE activity to measure");
  return set;
}

MeasurementFormat measurement_format(const std::string& text, const std::string& source) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw Error(source + ": empty file");
  // A Horovod timeline is a Chrome trace: an array of events, or an object with traceEvents.
  if (text[first] == '[' || (text[first] == '{' && text.find("\"traceEvents\"") != std::string::npos))
    return MeasurementFormat::horovod_timeline;
  return text[first] == '{' ? MeasurementFormat::bench_json : MeasurementFormat::nccl_tests_log;
}

MeasurementSet read_measurements(const std::string& path, const MeasurementHints& hints) {
  const std::string text = read_file(path);
  switch (measurement_format(text, path)) {
    case MeasurementFormat::horovod_timeline: return parse_horovod_timeline(text, path, hints);
    case MeasurementFormat::bench_json: return parse_bench_json(text, path);
    case MeasurementFormat::nccl_tests_log: break;
  }
  return parse_nccl_tests_log(text, path, hints);
}

MeasurementSet read_measurements(const std::vector<std::string>& paths, const MeasurementHints& hints) {
  if (paths.empty()) throw Error("no measurement files given");
  MeasurementSet all;
  for (const auto& path : paths) {
    MeasurementSet one = read_measurements(path, hints);
    all.files.insert(all.files.end(), one.files.begin(), one.files.end());
    all.rows.insert(all.rows.end(), one.rows.begin(), one.rows.end());
    all.skipped.insert(all.skipped.end(), one.skipped.begin(), one.skipped.end());
    all.unread_nccl_env.insert(all.unread_nccl_env.end(), one.unread_nccl_env.begin(), one.unread_nccl_env.end());
    all.fusion_copy_bytes += one.fusion_copy_bytes;
    all.fusion_copy_us += one.fusion_copy_us;
  }
  return all;
}

}  // namespace colltune::tuner
