// NCCL_ALGO and NCCL_PROTO as NCCL reads them (src/graph/tuning.cc, parseList, 2.24+):
// "LIST" or "^LIST" for every collective, then ";coll:LIST" entries for one collective each
// (only the first entry may lack a prefix). A LIST is comma-separated names; "^" turns the
// listed ones off and the others on. Names and prefixes are case-insensitive; NCCL rejects
// unknown ones, and so does colltune.
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "nccl_tuning.hpp"

namespace colltune::sim::nccl {
namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(sep, start), text.size());
    if (end > start) out.emplace_back(text.substr(start, end - start));  // strtok skips empty tokens
    start = end + 1;
  }
  return out;
}

template <int N, typename Parse>
void apply_list(std::string_view text, PerColl<int, N>& table, Parse parse) {
  const std::vector<std::string> entries = split(text, ';');
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const std::vector<std::string> parts = split(entries[e], ':');
    std::string prefix;
    std::string list = parts.empty() ? std::string() : parts.size() >= 2 ? parts[1] : parts[0];
    if (parts.size() >= 2) prefix = parts.front();
    else if (e > 0) throw Error("every entry after the first needs a collective prefix (coll:LIST)");
    bool unset = false;
    if (!list.empty() && list.front() == '^') {
      unset = true;
      list.erase(0, 1);
    }
    std::vector<int> listed;
    for (const std::string& name : split(list, ',')) listed.push_back(parse(name));
    for (NcclColl c : kNcclColls) {
      if (!prefix.empty() && parse_nccl_coll(prefix) != c) continue;
      auto& row = table[static_cast<std::size_t>(index_of(c))];
      for (int& v : row) v = unset ? 1 : 0;
      for (int i : listed) row[static_cast<std::size_t>(i)] = unset ? 0 : 1;
    }
  }
}

}  // namespace

Enables parse_enables(std::string_view algo_env, std::string_view proto_env) {
  Enables en;
  for (auto& row : en.algo) row.fill(1);
  for (auto& row : en.proto) row = {1, 2, 1};  // LL128 on only where NCCL's rules allow it
  try {
    apply_list<kNcclNumAlgos>(algo_env, en.algo, [](const std::string& n) { return index_of(parse_nccl_algo(n)); });
  } catch (const Error& e) {
    throw Error("NCCL_ALGO='" + std::string(algo_env) + "': " + e.what());
  }
  try {
    apply_list<kNcclNumProtos>(proto_env, en.proto,
                               [](const std::string& n) { return index_of(parse_nccl_proto(n)); });
  } catch (const Error& e) {
    throw Error("NCCL_PROTO='" + std::string(proto_env) + "': " + e.what());
  }
  return en;
}

}  // namespace colltune::sim::nccl
