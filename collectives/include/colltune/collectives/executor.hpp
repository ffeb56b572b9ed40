#pragma once
// The executor: one interpreter of the Schedule IR (docs/design.md "one schedule, several
// interpreters"). It walks this rank's steps in order and hands each to the communicator,
// which moves the bytes; the codec says how blocks travel and how they are reduced.
#include <cstddef>
#include <span>

#include "colltune/collectives/communicator.hpp"
#include "colltune/collectives/schedule.hpp"

namespace colltune::coll {

// Runs comm.rank()'s steps of `schedule` over `buffer` (schedule.count elements of
// `elem_size` bytes). Throws colltune::Error when the schedule was built for another rank
// count, TimeoutError when a peer does not arrive within timeout_s.
// Out of place (`initial` non-null and not `buffer`): the working buffer starts as a copy of
// `initial` without that copy being made up front: sends of untouched blocks read `initial`,
// the first receive-reduce into a block folds `initial` in, a receive-copy overwrites, and only
// what is left untouched at the end is copied. This saves a full pass over memory.
void execute(const Schedule& schedule, Communicator& comm, void* buffer, std::size_t elem_size,
             const WireCodec& codec, double timeout_s = kDefaultTimeoutS, const void* initial = nullptr);

// Block helpers shared by the transports.
inline bool overlaps(const Block& a, const Block& b) {
  return a.count > 0 && b.count > 0 && a.offset < b.end() && b.offset < a.end();
}
// True when a receive of `step` lands on elements that a send of the same step reads: the
// transport must then keep the sent bytes apart (a scratch copy) until the send completes.
bool receive_overlaps_send(const Step& step);
// True when `op` (a receive) overlaps any send of `step`.
bool overlaps_a_send(const Step& step, const Op& op);

// "rank 3 step 7" style context for error messages.
std::string step_where(int rank, int step_index);

}  // namespace colltune::coll
