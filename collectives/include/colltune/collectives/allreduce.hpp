#pragma once
// The collective front end: allreduce (in place or out of place, every dtype x op, avg as sum
// then 1/p, pre/post scale, fp16 compression), reduce-scatter and allgather, each through its
// registry algorithm and executed over any Communicator. Schedules are cached on the
// communicator per (algorithm, count, options).
#include <cstddef>
#include <string>
#include <string_view>

#include "colltune/collectives/communicator.hpp"
#include "colltune/collectives/dtype.hpp"
#include "colltune/collectives/registry.hpp"

namespace colltune::coll {

// none: reduce in the input dtype.
// fp16: Horovod's Compression.fp16 - cast to fp16, allreduce in fp16, cast back.
// fp16_fp32acc: fp16 on the wire, every hop accumulated in fp32, the result rounded to fp16
//   precision once at the end (so every rank holds the same values).
enum class Compression { none, fp16, fp16_fp32acc };
std::string_view to_string(Compression c);
// "none", "fp16", "fp16_fp32acc"; throws colltune::Error naming the value.
Compression parse_compression(std::string_view name);

// What to do when fp16 compression overflows (a finite value that becomes +-inf).
enum class OverflowPolicy { report, error };

struct AllreduceOptions {
  std::string algorithm = "ring";  // registry id
  AlgoOptions algo;                // chunking, inner algorithm of hierarchical*
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  Compression compression = Compression::none;
  double prescale = 1.0;   // inputs are multiplied by this before reducing
  double postscale = 1.0;  // results are multiplied by this after (avg adds 1/p)
  OverflowPolicy overflow = OverflowPolicy::report;
  double timeout_s = kDefaultTimeoutS;
};

struct AllreduceStats {
  std::size_t count = 0;           // elements
  std::size_t bytes = 0;           // count x dtype size
  std::size_t wire_bytes_sent = 0; // bytes this rank put on the wire
  // fp16 compression only: inputs of this rank that overflowed fp16 after prescale, and
  // result elements that are +-inf or NaN although no input was (the same on every rank).
  std::size_t input_overflows = 0;
  std::size_t result_overflows = 0;
  bool overflowed() const { return input_overflows + result_overflows > 0; }
};

// out[i] = op over ranks of in[i] (times prescale/postscale, /p for avg). in == out is the
// in-place form; otherwise the buffers must not overlap. Every rank passes the same count and
// options. Throws colltune::Error for bad options (unknown or inapplicable algorithm,
// compression of a non-float dtype, overlapping buffers, a null buffer with count > 0),
// colltune::TimeoutError when a peer does not arrive, and colltune::Error on fp16 overflow when
// options.overflow is OverflowPolicy::error.
AllreduceStats allreduce(Communicator& comm, const void* in, void* out, std::size_t count,
                         const AllreduceOptions& options = {});

// Reduce-scatter in place over `buffer` (count elements, every rank's full input). Afterwards
// this rank's block (returned) holds the reduction of that block; the rest is scratch.
// options.algorithm must name a reduce-scatter algorithm (e.g. "reduce_scatter_ring").
Block reduce_scatter(Communicator& comm, void* buffer, std::size_t count, const AllreduceOptions& options);

// Allgather in place over `buffer`: on entry this rank's block (see owned_block) holds its
// input; afterwards every block holds its owner's input. Algorithm e.g. "allgather_ring".
void allgather(Communicator& comm, void* buffer, std::size_t count, const AllreduceOptions& options);

// The block `comm.rank()` owns in a reduce-scatter/allgather of `count` elements.
Block owned_block(Communicator& comm, std::size_t count, const AllreduceOptions& options);

}  // namespace colltune::coll
