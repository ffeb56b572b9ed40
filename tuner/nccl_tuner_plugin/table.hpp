#pragma once
// The per-size table the plugin applies: the CSV `colltune tune` writes as nccl_tuner.conf, in
// the format NCCL's example tuner plugin documents:
//   collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
// -1 is a wildcard ("any" / "keep NCCL's"); `#` starts a comment; blank lines are skipped.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace colltune::nccl_plugin {

inline constexpr int kAny = -1;

// Limits, each named in the warning when a table exceeds it. 256 characters per data row is
// the line buffer of NCCL's example plugin, so a table valid here is read the same way there.
inline constexpr std::size_t kMaxRowChars = 256;
inline constexpr std::size_t kMaxFileBytes = std::size_t{1} << 20;  // 1 MiB
inline constexpr std::size_t kMaxRows = 4096;

struct Row {
  int collective = 0;  // nccl_abi::Collective
  std::uint64_t min_bytes = 0;  // inclusive
  std::uint64_t max_bytes = 0;  // inclusive
  int algorithm = kAny;  // nccl_abi::Algorithm, or kAny: leave the algorithm to NCCL
  int protocol = kAny;   // nccl_abi::Protocol, or kAny: the cheapest usable one
  int channels = kAny;   // > 0 overrides NCCL's channel count; kAny keeps it
  int n_nodes = kAny;
  int n_ranks = kAny;
  int num_pipe_ops = kAny;
  int reg_buff = kAny;  // 0 or 1, or kAny
  int line = 0;         // 1-based line in the file, for the log
};

// A loaded table: the rows in file order, or why the file was refused (then rows is empty).
struct Table {
  std::vector<Row> rows;
  std::string error;  // "line N: ..." for a bad row, or the file-level reason
};

// Parses the whole text; the first bad line refuses the table (a half-applied table would be
// harder to notice than none).
Table parse_table(std::string_view text);

// Reads at most kMaxFileBytes of `path` and parses it.
Table load_table(const std::string& path);

// Names as the CSV spells them, for the log ("?" outside the range).
const char* collective_name(int collective);
const char* algorithm_name(int algorithm);
const char* protocol_name(int protocol);

}  // namespace colltune::nccl_plugin
