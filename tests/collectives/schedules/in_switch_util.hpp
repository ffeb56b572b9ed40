#pragma once
// Helpers of the in-switch schedule tests (test_nvls.cpp, test_in_network.cpp): options with a
// chunk, and the elements a rank sends or receives over a whole schedule.
#include <cstddef>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/schedule.hpp"

namespace colltune::test {

inline coll::AlgoOptions chunked(std::size_t chunk) {
  coll::AlgoOptions o;
  o.chunk_elems = chunk;
  return o;
}

// Elements `rank` sends (send ops) or receives (recv_copy and recv_reduce ops) in all its steps.
inline std::size_t moved_by(const coll::Schedule& s, int rank, bool send) {
  std::size_t e = 0;
  for (const coll::Step& st : s.steps(rank))
    for (const coll::Op& op : st.ops) e += (op.kind == coll::OpKind::send) == send ? op.block.count : 0;
  return e;
}
inline std::size_t sent_by(const coll::Schedule& s, int rank) { return moved_by(s, rank, true); }
inline std::size_t received_by(const coll::Schedule& s, int rank) { return moved_by(s, rank, false); }

}  // namespace colltune::test
