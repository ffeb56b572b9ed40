// nccl_nvls: NCCL's single-node NVLS allreduce (NCCL_ALGO_NVLS on one host, NVLink SHARP in a
// Hopper NVSwitch; src/device/all_reduce.h, runNvls), as one schedule whose last participant is
// the switch (Schedule::helpers = 1): ranks 0..L-1 are the host's GPUs, rank L the NVSwitch.
//
// What NVLS moves: GPU g owns shard g of the buffer (segment_of(g, L, n)); it reads that shard
// with multimem.ld_reduce, so the switch sums every GPU's copy of it in flight, and writes the
// sum with multimem.st, so the switch sends it to every GPU. Per shard that is: every GPU's copy
// up to the switch, the sum down to every GPU. Which GPU drives a shard does not change the
// bytes, so here the switch is the one participant that receives and sends.
//
// Steps. Every shard is cut into pipeline chunks (chunk_elems; 0: nvls_chunk_elems' default),
// R chunks in the largest shard; in time step t = 0..R:
//  - up: every GPU sends chunk t of every shard to the switch, which copies GPU 0's and reduces
//    GPUs 1..L-1's into it (in that op order within the step, schedule.hpp's helper rule);
//  - down: the switch sends chunk t-1 of every shard, now the sum, to every GPU (recv_copy).
// Bytes: each GPU sends n up and receives n down, over its own links to the switch: n each way
// on every GPU link, against 2(L-1)/L n for a ring. The switch receives L n and sends L n, over
// L links. Summation depth 1: every element is one in-switch sum.
// Multi-node NVLS (NVLS-Tree: NVLS in each host, a tree across) is out of scope: one host only.
#include <algorithm>
#include <string>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {

std::optional<std::string> nccl_nvls_not_applicable(const RankLayout& layout, std::size_t /*count*/,
                                                    const AlgoOptions& /*options*/) {
  if (layout.nhosts() > 1)
    return "single-node NVLS only: the layout has " + std::to_string(layout.nhosts()) +
           " hosts (multi-node NVLS-Tree is not modelled)";
  return std::nullopt;  // one rank: a GPU alone, nothing to reduce
}

std::size_t nvls_chunk_elems(std::size_t shard_elems, std::size_t chunk_elems) {
  if (chunk_elems > 0) return chunk_elems;
  // Pipelined by default, as NVLS is: up to kNvlsRounds chunks a shard, none under
  // kNvlsMinChunk elements, so small buffers take one step up and one down.
  const std::size_t even = (shard_elems + kNvlsRounds - 1) / kNvlsRounds;
  return std::max(even, kNvlsMinChunk);
}

Schedule build_nccl_nvls(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  if (std::optional<std::string> why = nccl_nvls_not_applicable(layout, count, options))
    throw Error("nccl_nvls: " + *why);
  const int gpus = layout.nranks() - 1;
  const int nvswitch = gpus;
  ScheduleBuilder b("nccl_nvls", Collective::allreduce, layout.nranks(), count);
  if (layout.nranks() < 2) return b.finish();  // a GPU alone (no switch: every rank is data)
  b.set_helpers(1);
  const auto shards = static_cast<std::size_t>(gpus);
  const std::size_t chunk = nvls_chunk_elems(segment_of(0, shards, count).count, options.chunk_elems);
  const std::size_t rounds = chunk_count(segment_of(0, shards, count).count, chunk);
  for (std::size_t t = 0; t <= rounds; ++t) {
    const int step = static_cast<int>(t);
    for (std::size_t s = 0; s < shards; ++s) {
      const Block shard = segment_of(s, shards, count);
      if (t < rounds) {  // up: GPU 0's copy first, the others reduced into it
        const Block up = chunk_of(shard, t, chunk);
        for (int g = 0; g < gpus; ++g) b.message(step, g, nvswitch, up, /*reduce=*/g > 0);
      }
      if (t > 0) {  // down: the sum to every GPU
        const Block down = chunk_of(shard, t - 1, chunk);
        for (int g = 0; g < gpus; ++g) b.message(step, nvswitch, g, down, /*reduce=*/false);
      }
    }
  }
  return b.finish();
}

std::size_t nccl_nvls_pipeline_pieces(const RankLayout& layout, const AlgoOptions& options) {
  // A round is one chunk of every shard only when the chunk is the caller's (the default one
  // depends on the size).
  return options.chunk_elems > 0 ? static_cast<std::size_t>(std::max(layout.nranks() - 1, 0)) : 0;
}

}  // namespace colltune::coll::algo
