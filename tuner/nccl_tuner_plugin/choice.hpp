#pragma once
// Matching a collective against the table and applying the matching row to NCCL's choice.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "table.hpp"

namespace colltune::nccl_plugin {

// One collective as NCCL describes it to the tuner. reg_buff is kAny where the interface
// version does not pass it (v2, v3): then rows that require 0 or 1 do not match.
struct Query {
  int collective = 0;
  std::uint64_t bytes = 0;
  int num_pipe_ops = 1;
  int reg_buff = kAny;
};

// The rows whose nNodes and nRanks fit a communicator of this shape, in file order. Done once
// at init: a row for another job shape can never match this communicator.
std::vector<Row> rows_for(const std::vector<Row>& rows, std::size_t n_nodes, std::size_t n_ranks);

// The first row matching the query (collective, min <= bytes <= max, numPipeOps, regBuff), or
// nullptr. First match wins, as in NCCL's example plugin.
const Row* first_match(const std::vector<Row>& rows, const Query& query);

// NCCL's cost table: float[num_algo][num_proto], contiguous, passed cast to float**.
class CostTable {
 public:
  CostTable(float** table, int num_algo, int num_proto)
      : cells_(reinterpret_cast<float*>(table)), num_algo_(num_algo), num_proto_(num_proto) {}
  bool contains(int algorithm, int protocol) const {
    return algorithm >= 0 && algorithm < num_algo_ && protocol >= 0 && protocol < num_proto_;
  }
  // Row-major: algorithm a's protocols are adjacent.
  float& at(int algorithm, int protocol) const { return cells_[algorithm * num_proto_ + protocol]; }
  // NCCL only considers cells >= 0; -1 (and anything negative, or NaN) is disabled/unsupported.
  bool usable(int algorithm, int protocol) const { return contains(algorithm, protocol) && at(algorithm, protocol) >= 0.0f; }
  int num_protocols() const { return num_proto_; }

 private:
  float* cells_;
  int num_algo_;
  int num_proto_;
};

// What applying a row did.
enum class Verdict {
  applied,        // the (algorithm, protocol) cell was made the cheapest
  channels_only,  // algorithm -1: NCCL chooses; only a channel count was set (if any)
  unusable,       // NCCL marked the cell (or every protocol of the algorithm) unusable: nothing changed
  outside_table,  // the table NCCL passed has no such algorithm/protocol (an older NCCL): nothing changed
};

struct Choice {
  Verdict verdict = Verdict::unusable;
  int algorithm = kAny;
  int protocol = kAny;  // resolved: the cheapest usable one when the row says -1
  bool channels_set = false;
};

// Applies `row` to the cost table: the chosen cell is set to 0, below every usable cost, and
// channels > 0 is written to *n_channels. A cell NCCL marked unusable is never touched; then
// nothing is (channels included), so NCCL keeps its whole choice.
Choice apply_row(const Row& row, const CostTable& table, int* n_channels);

// The v2 interface has no cost table: NCCL uses the algorithm and protocol the plugin names,
// unchecked. So only combinations every NCCL build has for that collective are named: ring, or
// tree for allreduce, with LL or Simple. Anything else leaves NCCL's choice (verdict unusable).
Choice apply_row_v2(const Row& row, int* algorithm, int* protocol, int* n_channels);

}  // namespace colltune::nccl_plugin
