// nccl_collnet: NCCL's CollNet allreduce as CollNet Direct runs it (NCCL_ALGO_COLLNET_DIRECT;
// src/device/all_reduce.h, runCollNetDirect) with SHARP: the network switch sums the hosts'
// partial sums. One schedule whose last participant is the network switch (Schedule::helpers =
// 1): the layout is H hosts of L GPUs plus, as the last rank and alone on a host of its own, the
// SHARP switch (topo::with_sharp_switch: the root of the leaf/spine network, the spine or the one
// leaf, which sums everything the hosts send; a real SHARP tree also sums at the leaves, which
// moves the same bytes over each host's NICs).
//
// Inside a host CollNet Direct reduces directly, not along a chain (CollNet Chain) nor in the
// NVSwitch: the buffer is cut into L shards and GPU g is the head of shard g (NCCL's heads are
// the GPUs next to a NIC; a DGX H100 has one NIC per GPU, so every GPU is one). Op channel g:
// the simulator sends shard g across hosts through GPU g's NIC.
//
// Steps. Each shard is cut into R pipeline chunks (nvls_chunk_elems' default); chunk c of shard g
// moves at these time steps:
//  - c:   scatter-reduce: every other GPU of the host sends it to the head g, which reduces it;
//  - c+1: the head sends the host's partial sum to the switch (host 0's copied, the others reduced
//         into it in op order, schedule.hpp's helper rule);
//  - c+2: the switch sends the sum of all hosts back to every host's head (recv_copy);
//  - c+3: the head sends it to the host's other L-1 GPUs (recv_copy).
// R+3 steps in all. Bytes, with n the buffer: every GPU sends (L-1)n/L to its heads and receives
// (L-1)n/L from them, inside the host, each way. Across hosts a head sends n/L to the switch and
// receives n/L back, so a host moves n out and n in over its NICs where nccl_tree and ring move
// about 2n: SHARP halves the network traffic. The switch receives H n and sends H n, one port per
// host link. Summation depth: L-1 (the head adds its host-mates' shards) plus 1 (the in-switch sum).
#include <algorithm>
#include <string>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

int switch_rank(const RankLayout& layout) { return layout.nranks() - 1; }

// The data hosts' GPUs, in host order (the switch's own host left out).
std::vector<std::vector<int>> data_hosts(const RankLayout& layout) {
  std::vector<std::vector<int>> out;
  const int sw_host = layout.host_of(switch_rank(layout));
  for (int h = 0; h < layout.nhosts(); ++h)
    if (h != sw_host) out.push_back(layout.ranks_on_host(h));
  return out;
}

}  // namespace

std::optional<std::string> nccl_collnet_not_applicable(const RankLayout& layout, std::size_t /*count*/,
                                                       const AlgoOptions& /*options*/) {
  // A GPU alone: an empty schedule, no switch to take part.
  if (layout.nranks() < 2) return std::nullopt;
  const int sw = switch_rank(layout);
  if (layout.nhosts() < 2 || layout.ranks_on_host(layout.host_of(sw)).size() != 1)
    return "needs the network's SHARP switch as the last rank, alone outside every host (topo::with_sharp_switch)";
  const std::vector<std::vector<int>> hosts = data_hosts(layout);
  for (const std::vector<int>& h : hosts)
    if (h.size() != hosts.front().size()) return "needs the same number of GPUs on every host";
  return std::nullopt;
}

Schedule build_nccl_collnet(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  if (std::optional<std::string> why = nccl_collnet_not_applicable(layout, count, options))
    throw Error("nccl_collnet: " + *why);
  ScheduleBuilder b("nccl_collnet", Collective::allreduce, layout.nranks(), count);
  if (layout.nranks() < 2) return b.finish();  // a GPU alone, nothing to reduce
  b.set_helpers(1);  // the layout has the switch ranks: checked above
  if (count == 0) return b.finish();
  const int sw = switch_rank(layout);
  const std::vector<std::vector<int>> hosts = data_hosts(layout);
  const std::size_t shards = hosts.front().size();
  const std::size_t chunk = nvls_chunk_elems(segment_of(0, shards, count).count, options.chunk_elems);
  const std::size_t rounds = chunk_count(segment_of(0, shards, count).count, chunk);
  auto valid = [&](long long c) { return c >= 0 && c < static_cast<long long>(rounds); };
  for (long long t = 0; t < static_cast<long long>(rounds) + 3; ++t) {
    const int step = static_cast<int>(t);
    for (std::size_t g = 0; g < shards; ++g) {
      const Block shard = segment_of(g, shards, count);
      const auto channel = static_cast<std::uint16_t>(g);
      auto at = [&](long long c) { return chunk_of(shard, static_cast<std::size_t>(c), chunk); };
      for (std::size_t h = 0; h < hosts.size(); ++h) {
        const std::vector<int>& gpus = hosts[h];
        const int head = gpus[g];
        if (valid(t))  // scatter-reduce to the head
          for (int r : gpus)
            if (r != head) b.message(step, r, head, at(t), true, channel);
        if (valid(t - 1)) b.message(step, head, sw, at(t - 1), h > 0, channel);  // up to the switch
        if (valid(t - 2)) b.message(step, sw, head, at(t - 2), false, channel);  // the sum back
        if (valid(t - 3))                                                        // broadcast in the host
          for (int r : gpus)
            if (r != head) b.message(step, head, r, at(t - 3), false, channel);
      }
    }
  }
  return b.finish();
}

int nccl_collnet_depth(const RankLayout& layout, const AlgoOptions& options) {
  if (layout.nranks() < 2 || nccl_collnet_not_applicable(layout, 0, options)) return 0;
  const auto gpus = static_cast<int>(data_hosts(layout).front().size());
  return gpus - 1 + 1;
}

}  // namespace colltune::coll::algo
