#pragma once
// The threads transport: ranks are threads of one process sharing memory. A send publishes a
// pointer to the sender's bytes and the receiver reduces (or copies) straight from them, so a
// block crosses memory once; the sender's step ends only when its sends have been consumed,
// which is what keeps the published bytes stable. A scratch copy is made only when a receive
// of a step overlaps a send of the same step (recursive doubling exchanging whole buffers), or
// when the codec encodes blocks (fp16 on the wire).
#include <functional>

#include "colltune/collectives/communicator.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::coll {

// Runs fn(comm) on layout.nranks() threads, rank r on thread r. If a rank throws, every other
// rank's waits end promptly (they throw too), all threads are joined, and the first exception
// thrown by any rank is rethrown here: a failing rank never leaves the others hanging.
// Throws colltune::Error for an empty layout.
void run_threads(const RankLayout& layout, const std::function<void(Communicator&)>& fn);
void run_threads(int nranks, const std::function<void(Communicator&)>& fn);

}  // namespace colltune::coll
