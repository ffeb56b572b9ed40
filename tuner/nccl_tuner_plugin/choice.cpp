// Row matching and the edit of NCCL's cost table.
#include "choice.hpp"

#include "nccl_tuner_abi.h"

namespace colltune::nccl_plugin {
namespace {

bool fits(int wanted, std::uint64_t actual) {
  return wanted == kAny || (wanted > 0 && static_cast<std::uint64_t>(wanted) == actual);
}

bool matches(const Row& row, const Query& q) {
  return row.collective == q.collective && row.min_bytes <= q.bytes && q.bytes <= row.max_bytes &&
         (row.num_pipe_ops == kAny || row.num_pipe_ops == q.num_pipe_ops) &&
         (row.reg_buff == kAny || row.reg_buff == q.reg_buff);
}

// The cheapest usable protocol of `algorithm`, or kAny when NCCL disabled all of them.
int cheapest_protocol(const CostTable& table, int algorithm) {
  int best = kAny;
  for (int p = 0; p < table.num_protocols(); ++p)
    if (table.usable(algorithm, p) && (best == kAny || table.at(algorithm, p) < table.at(algorithm, best))) best = p;
  return best;
}

bool set_channels(const Row& row, int* n_channels) {
  if (row.channels <= 0 || n_channels == nullptr) return false;
  *n_channels = row.channels;
  return true;
}

}  // namespace

std::vector<Row> rows_for(const std::vector<Row>& rows, std::size_t n_nodes, std::size_t n_ranks) {
  std::vector<Row> out;
  for (const Row& row : rows)
    if (fits(row.n_nodes, n_nodes) && fits(row.n_ranks, n_ranks)) out.push_back(row);
  return out;
}

const Row* first_match(const std::vector<Row>& rows, const Query& query) {
  for (const Row& row : rows)
    if (matches(row, query)) return &row;
  return nullptr;
}

Choice apply_row(const Row& row, const CostTable& table, int* n_channels) {
  Choice c{Verdict::channels_only, row.algorithm, row.protocol, false};
  if (row.algorithm == kAny) {
    c.channels_set = set_channels(row, n_channels);
    return c;
  }
  if (!table.contains(row.algorithm, row.protocol == kAny ? 0 : row.protocol)) {
    c.verdict = Verdict::outside_table;
    return c;
  }
  if (c.protocol == kAny) c.protocol = cheapest_protocol(table, row.algorithm);
  if (c.protocol == kAny || !table.usable(c.algorithm, c.protocol)) {
    c.verdict = Verdict::unusable;
    return c;
  }
  // 0 is the lowest cost NCCL accepts (it skips negative cells), so the cell wins unless another
  // usable cell is exactly 0 too; NCCL's model never prices a collective at 0.
  table.at(c.algorithm, c.protocol) = 0.0f;
  c.verdict = Verdict::applied;
  c.channels_set = set_channels(row, n_channels);
  return c;
}

Choice apply_row_v2(const Row& row, int* algorithm, int* protocol, int* n_channels) {
  Choice c{Verdict::channels_only, row.algorithm, row.protocol, false};
  if (row.algorithm == kAny) {
    c.channels_set = set_channels(row, n_channels);
    return c;
  }
  const bool safe_algorithm =
      row.algorithm == nccl_abi::kRing || (row.algorithm == nccl_abi::kTree && row.collective == nccl_abi::kAllReduce);
  const bool safe_protocol = row.protocol == nccl_abi::kLL || row.protocol == nccl_abi::kSimple;
  if (!safe_algorithm || !safe_protocol || algorithm == nullptr || protocol == nullptr) {
    c.verdict = Verdict::unusable;
    return c;
  }
  *algorithm = row.algorithm;
  *protocol = row.protocol;
  c.verdict = Verdict::applied;
  c.channels_set = set_channels(row, n_channels);
  return c;
}

}  // namespace colltune::nccl_plugin
