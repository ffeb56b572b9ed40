// Parsing the plugin's CSV table. Strict: every field is checked, numbers must be whole decimal
// integers with nothing around them, and the first bad line refuses the whole table, named by
// line number and field, so that a typo never turns into a silently different tuning.
#include "table.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>

#include "nccl_tuner_abi.h"

namespace colltune::nccl_plugin {
namespace {

// Field order as NCCL's example plugin documents it; numPipeOps and regBuff may be omitted.
enum Field : std::size_t {
  kCollectiveField, kMinBytes, kMaxBytes, kAlgorithmField, kProtocolField,
  kChannels, kNodes, kRanks, kPipeOps, kRegBuff, kNumFields
};
constexpr std::size_t kMinFields = kPipeOps;
constexpr const char* kFieldNames[kNumFields] = {"collective_type", "min_bytes", "max_bytes", "algorithm",
                                                 "protocol",        "channels",  "nNodes",    "nRanks",
                                                 "numPipeOps",      "regBuff"};

// Indexed by the NCCL enum values (nccl_abi::Collective, Algorithm, Protocol).
constexpr const char* kCollectives[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
constexpr const char* kAlgorithms[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
constexpr const char* kProtocols[] = {"ll", "ll128", "simple"};
static_assert(std::size(kCollectives) == nccl_abi::kNumCollectives);
static_assert(std::size(kAlgorithms) == nccl_abi::kNumAlgorithms);
static_assert(std::size(kProtocols) == nccl_abi::kNumProtocols);

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x >= 'A' && x <= 'Z' ? x - 'A' + 'a' : x) == y;
         });
}

template <std::size_t N>
std::string choices(const char* const (&names)[N]) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// The row being parsed: its fields, and the first error found in them.
class RowParser {
 public:
  RowParser(std::vector<std::string_view> fields, int line) : fields_(std::move(fields)) { row_.line = line; }

  // Fills the row; returns "" or the reason the row is refused.
  std::string parse() {
    name(kCollectiveField, kCollectives, false, row_.collective);
    bytes(kMinBytes, row_.min_bytes);
    bytes(kMaxBytes, row_.max_bytes);
    name(kAlgorithmField, kAlgorithms, true, row_.algorithm);
    name(kProtocolField, kProtocols, true, row_.protocol);
    count(kChannels, row_.channels);
    count(kNodes, row_.n_nodes);
    count(kRanks, row_.n_ranks);
    if (fields_.size() > kPipeOps) count(kPipeOps, row_.num_pipe_ops);
    if (fields_.size() > kRegBuff) reg_buff(row_.reg_buff);
    if (error_.empty()) cross_checks();
    return error_;
  }
  const Row& row() const { return row_; }

 private:
  void fail(std::size_t field, const std::string& why) {
    if (error_.empty())
      error_ = "field " + std::to_string(field + 1) + " (" + kFieldNames[field] + ") '" + std::string(fields_[field]) +
               "' " + why;
  }

  // One of `names` (case-insensitive), or -1 where a wildcard is allowed.
  template <std::size_t N>
  void name(std::size_t field, const char* const (&names)[N], bool wildcard, int& out) {
    const std::string_view v = fields_[field];
    out = kAny;
    if (wildcard && v == "-1") return;
    for (std::size_t i = 0; i < N; ++i)
      if (equal_ignoring_case(v, names[i])) {
        out = static_cast<int>(i);
        return;
      }
    fail(field, "is not one of " + choices(names) + (wildcard ? ", -1" : ""));
  }

  // A byte count: a plain decimal integer from 0 to 2^64-1 (no sign, no spaces inside).
  void bytes(std::size_t field, std::uint64_t& out) {
    const std::string_view v = fields_[field];
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc{} || end != v.data() + v.size())
      fail(field, ec == std::errc::result_out_of_range ? "is larger than 2^64-1" : "is not a byte count");
  }

  // A whole decimal int.
  bool integer(std::size_t field, int& out) {
    const std::string_view v = fields_[field];
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (!v.empty() && ec == std::errc{} && end == v.data() + v.size()) return true;
    fail(field, ec == std::errc::result_out_of_range ? "is out of range" : "is not an integer");
    return false;
  }

  // -1 (any / keep NCCL's) or a positive count.
  void count(std::size_t field, int& out) {
    if (integer(field, out) && out != kAny && out <= 0) fail(field, "must be -1 or a positive integer");
  }

  void reg_buff(int& out) {
    if (integer(kRegBuff, out) && out != kAny && out != 0 && out != 1) fail(kRegBuff, "must be -1, 0 or 1");
  }

  void cross_checks() {
    if (row_.min_bytes > row_.max_bytes) fail(kMaxBytes, "is below min_bytes " + std::to_string(row_.min_bytes));
    // NCCL takes an algorithm and protocol together or neither: a protocol alone cannot apply.
    if (row_.algorithm == kAny && row_.protocol != kAny) fail(kProtocolField, "needs an algorithm (algorithm is -1)");
  }

  std::vector<std::string_view> fields_;
  Row row_;
  std::string error_;
};

std::vector<std::string_view> split_fields(std::string_view data) {
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const std::size_t comma = data.find(',', start);
    fields.push_back(trim(data.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

// Parses one line that holds data; returns "" or the reason.
std::string parse_line(std::string_view raw, std::string_view data, int line, std::vector<Row>& rows) {
  if (trim(raw).size() > kMaxRowChars)
    return "longer than " + std::to_string(kMaxRowChars) + " characters (the limit of a data row)";
  if (rows.size() == kMaxRows) return "more than " + std::to_string(kMaxRows) + " rows (the limit of a table)";
  auto fields = split_fields(data);
  if (fields.size() < kMinFields || fields.size() > kNumFields)
    return std::to_string(fields.size()) + " fields, expected " + std::to_string(kMinFields) + " to " +
           std::to_string(kNumFields) + " (" + kFieldNames[0] + ",...," + kFieldNames[kNumFields - 1] + ")";
  RowParser parser(std::move(fields), line);
  std::string error = parser.parse();
  if (error.empty()) rows.push_back(parser.row());
  return error;
}

}  // namespace

Table parse_table(std::string_view text) {
  Table table;
  int line = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view raw = text.substr(start, end - start);
    start = end + 1;
    ++line;
    const std::string_view data = trim(raw.substr(0, raw.find('#')));
    if (data.empty()) continue;
    if (std::string error = parse_line(raw, data, line, table.rows); !error.empty()) {
      table.rows.clear();
      table.error = "line " + std::to_string(line) + ": " + error;
      return table;
    }
  }
  if (table.rows.empty()) table.error = "no rows (only comments or blank lines)";
  return table;
}

Table load_table(const std::string& path) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return {{}, std::string("cannot open (") + std::strerror(errno) + ")"};
  // One byte over the limit tells "exactly at the limit" from "larger".
  std::string text(kMaxFileBytes + 1, '\0');
  const std::size_t n = std::fread(text.data(), 1, text.size(), file.get());
  if (std::ferror(file.get())) return {{}, std::string("cannot read (") + std::strerror(errno) + ")"};
  if (n > kMaxFileBytes) return {{}, "larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB (the limit of a table)"};
  text.resize(n);
  return parse_table(text);
}

const char* collective_name(int c) {
  return c >= 0 && c < nccl_abi::kNumCollectives ? kCollectives[c] : "?";
}
const char* algorithm_name(int a) { return a >= 0 && a < nccl_abi::kNumAlgorithms ? kAlgorithms[a] : "?"; }
const char* protocol_name(int p) { return p >= 0 && p < nccl_abi::kNumProtocols ? kProtocols[p] : "?"; }

}  // namespace colltune::nccl_plugin
