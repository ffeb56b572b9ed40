#pragma once
// The Schedule IR: the one thing every interpreter shares (docs/design.md "one schedule, several
// interpreters"). A schedule says who talks to whom about which block, nothing else: no I/O,
// no arithmetic, no timing.
//
// Semantics (executors, the simulator and the validator all implement exactly this):
// - Every rank owns one working buffer of `count` elements. For allreduce and reduce-scatter
//   it starts as the rank's input; for allgather the rank's input sits at block `owned[rank]`.
// - A rank runs its steps in order. A step is a set of operations posted together; the step
//   ends when all of them have completed.
// - Within a step every send reads the buffer as it was when the step began, and every receive
//   lands when the step ends. A receive whose range overlaps a send of the same step is legal
//   (recursive doubling exchanges whole buffers); executors use a scratch buffer for it.
// - Messages from rank a to rank b match in order: the k-th send a->b pairs with the k-th
//   receive at b from a. Paired blocks have equal counts (offsets may differ).
// - recv_reduce combines the received elements into the block (buf = buf op received);
//   recv_copy overwrites the block with them. Receives of one step that land on the same
//   elements land in op order (a helper's recv_copy first, then its recv_reduces).
// - Helpers: the last `helpers` ranks are participants that are not data ranks (parameter
//   servers; later an in-switch reduction such as NVLS/SHARP, modelled as a rank on the
//   switch). A helper's buffer starts undefined: its input does not count, so it must
//   recv_copy an element before it reduces into or sends it; its final buffer is not checked.
//   "All ranks" below means the data ranks 0..nranks-helpers-1.
// - Afterwards: allreduce - every rank holds the full reduction in [0, count);
//   reduce-scatter - rank r holds the reduction of block owned[r];
//   allgather - every rank holds every rank's owned block.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace colltune::coll {

enum class Collective { allreduce, reduce_scatter, allgather };
std::string_view to_string(Collective c);

// A range of elements in the working buffer.
struct Block {
  std::size_t offset = 0;
  std::size_t count = 0;
  std::size_t end() const { return offset + count; }
  bool operator==(const Block&) const = default;
};

enum class OpKind : std::uint8_t { send, recv_reduce, recv_copy };

// One operation of a step. `channel` names the connection a message travels on: NCCL runs
// several channels (rings) at once and sends each through the NIC it assigns to that channel;
// the simulator routes an inter-host message by it (topo::Topology::route), executors ignore
// it. Paired send and receive carry the same channel. Laid out so that an Op stays 24 bytes.
struct Op {
  OpKind kind = OpKind::send;
  std::uint16_t channel = 0;
  int peer = 0;
  Block block;

  Op() = default;
  Op(OpKind kind_, int peer_, Block block_, std::uint16_t channel_ = 0)
      : kind(kind_), channel(channel_), peer(peer_), block(block_) {}
  bool operator==(const Op&) const = default;
};

struct Step {
  std::vector<Op> ops;
};

struct Schedule {
  std::string algorithm;            // registry id that built it
  Collective collective = Collective::allreduce;
  int nranks = 0;
  std::size_t count = 0;            // elements in each rank's working buffer
  std::vector<std::vector<Step>> ranks;  // ranks[r] = rank r's steps in order
  std::vector<Block> owned;         // reduce-scatter / allgather: each data rank's block (empty for allreduce)
  int helpers = 0;                  // trailing ranks that are not data ranks (see above)

  int data_ranks() const { return nranks - helpers; }
  bool is_helper(int rank) const { return rank >= data_ranks(); }

  const std::vector<Step>& steps(int rank) const { return ranks.at(static_cast<std::size_t>(rank)); }
  std::size_t total_ops() const;
  // Elements sent by all ranks together (sum over send ops of block.count).
  std::size_t total_elements_sent() const;
};

// Throws colltune::Error with the first violation, naming rank, step and op:
// peers out of range or equal to self, helpers out of [0,nranks), blocks outside [0,count), unmatched or size-mismatched
// sends/receives, a deadlock (ranks waiting on each other forever), or a final state that is not
// the collective's result (checked symbolically: every element's set of contributing ranks,
// with no rank's contribution counted twice).
void validate(const Schedule& schedule);

}  // namespace colltune::coll
