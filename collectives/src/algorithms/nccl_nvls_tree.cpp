// nccl_nvls_tree: NCCL's multi-node NVLS allreduce (NCCL_ALGO_NVLS_TREE; src/device/all_reduce.h,
// runTreeNvls): NVLink SHARP inside every host, NCCL's double binary tree across hosts. One
// schedule whose last H participants are the hosts' NVSwitches (Schedule::helpers = H): the
// layout is H hosts of L GPUs plus, as the last rank on each host, that host's switch
// (topo::with_nvls_switch adds one per host, in host order, after every GPU).
//
// Who crosses hosts. NCCL's NVLS-Tree gives every channel a head GPU per host (the GPU next to
// the channel's NIC): the head reads its share's host sum out of the switch (multimem.ld_reduce),
// runs the tree across hosts for it through its NIC, and writes the final sum back through the
// switch (multimem.st). Here the buffer is cut into 2L segments, channel j = tree * L + g for
// tree 0/1 and GPU g: GPU g of every host is the head of segments g and L + g, so every GPU (and
// its NIC: one per GPU on a DGX H100) carries 1/L of the host's traffic across hosts. Segment j
// runs host tree `tree` of NCCL's double binary tree (in_order_tree over the hosts and its
// mirror/shift, second_tree_rank, as nccl_tree), with GPU g of each host as the tree's vertex.
//
// Steps. Each segment is cut into R pipeline chunks (nvls_chunk_elems); with the host tree of
// height T and a host at depth d, chunk c of a segment moves at these time steps:
//  - c:           up: every GPU of every host sends it to its switch (GPU 0 copied, the others
//                 reduced into it in op order, schedule.hpp's helper rule): the host sum;
//  - c+1:         the switch sends the host sum to the head GPU g (recv_copy);
//  - c+2+T-d:     a non-root head sends its partial sum to its parent host's head, which reduces
//                 it (the children sent one step earlier), as nccl_tree does across hosts;
//  - c+2+T+d:     the head has the final sum (the root at once, the others from their parent one
//                 step before) and sends it to its children's heads (recv_copy) and to its switch;
//  - c+3+T+d:     the switch sends the final sum to the host's other L-1 GPUs (recv_copy).
// R+2T+3 steps in all. Bytes, per host with n the buffer: every GPU sends n to its switch and
// receives n back (L-1 final shards and its own host sum), and sends its own 1/L of the final
// sums up once more: about n(1+1/L) out and n in over each GPU's NVLink. Across hosts each head
// moves its segments as nccl_tree's tree does: a host sends and receives about 2n over its L
// NICs (2n/L per NIC), the same as nccl_tree, but inside the host the switch sums instead of a
// chain of GPUs. Summation depth: 1 (the in-switch sum) plus the tree height across hosts.
// NCCL's multimem.st also writes the head's own copy; here the head keeps what it already has.
#include <algorithm>
#include <string>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

// Host h's GPUs (its ranks but the last) and its switch (the last).
struct HostRanks {
  std::vector<int> gpus;
  int nvswitch = -1;
};

std::vector<HostRanks> host_ranks(const RankLayout& layout) {
  std::vector<HostRanks> out(static_cast<std::size_t>(layout.nhosts()));
  for (int h = 0; h < layout.nhosts(); ++h) {
    const std::vector<int>& ranks = layout.ranks_on_host(h);
    HostRanks& hr = out[static_cast<std::size_t>(h)];
    hr.gpus.assign(ranks.begin(), ranks.end() - 1);
    hr.nvswitch = ranks.back();
  }
  return out;
}

}  // namespace

std::optional<std::string> nccl_nvls_tree_not_applicable(const RankLayout& layout, std::size_t /*count*/,
                                                         const AlgoOptions& /*options*/) {
  // A GPU alone: an empty schedule, no switch to take part.
  if (layout.nranks() < 2) return std::nullopt;
  if (!layout.is_uniform()) return "needs the same number of GPUs on every host";
  if (layout.min_ranks_per_host() < 2)
    return "needs every host's NVSwitch as its last rank after at least one GPU (topo::with_nvls_switch)";
  const int first_switch = layout.nranks() - layout.nhosts();
  for (int h = 0; h < layout.nhosts(); ++h) {
    const std::vector<int>& ranks = layout.ranks_on_host(h);
    if (ranks.back() < first_switch || ranks[ranks.size() - 2] >= first_switch)
      return "host " + std::to_string(h) + "'s last rank is not its NVSwitch (the last " +
             std::to_string(layout.nhosts()) + " ranks are the switches, one per host)";
  }
  return std::nullopt;
}

Schedule build_nccl_nvls_tree(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  if (std::optional<std::string> why = nccl_nvls_tree_not_applicable(layout, count, options))
    throw Error("nccl_nvls_tree: " + *why);
  ScheduleBuilder b("nccl_nvls_tree", Collective::allreduce, layout.nranks(), count);
  if (layout.nranks() < 2) return b.finish();  // a GPU alone, nothing to reduce
  b.set_helpers(layout.nhosts());  // the layout has the switch ranks: checked above
  if (count == 0) return b.finish();
  const std::vector<HostRanks> hosts = host_ranks(layout);
  const int nhosts = layout.nhosts();
  const auto gpus = static_cast<int>(hosts.front().gpus.size());
  const std::vector<BinaryTree> trees{double_tree(nhosts, 0), double_tree(nhosts, 1)};  // by host
  const auto segments = static_cast<std::size_t>(2 * gpus);
  const std::size_t chunk = nvls_chunk_elems(segment_of(0, segments, count).count, options.chunk_elems);
  const std::size_t rounds = chunk_count(segment_of(0, segments, count).count, chunk);
  const long long height = trees[0].height;  // the second tree is the first relabelled
  const long long steps = static_cast<long long>(rounds) + 2 * height + 3;
  auto valid = [&](long long c) { return c >= 0 && c < static_cast<long long>(rounds); };
  for (long long t = 0; t < steps; ++t) {
    const int step = static_cast<int>(t);
    for (std::size_t j = 0; j < segments; ++j) {
      const BinaryTree& tree = trees[j / static_cast<std::size_t>(gpus)];
      const auto head_index = static_cast<std::size_t>(j % static_cast<std::size_t>(gpus));
      const auto channel = static_cast<std::uint16_t>(j);
      const Block segment = segment_of(j, segments, count);
      auto at = [&](long long c) { return chunk_of(segment, static_cast<std::size_t>(c), chunk); };
      const long long th = tree.height;
      for (int h = 0; h < nhosts; ++h) {
        const HostRanks& hr = hosts[static_cast<std::size_t>(h)];
        const int head = hr.gpus[head_index];
        const long long d = tree.depth[static_cast<std::size_t>(h)];
        if (valid(t))  // up into the switch: the host sum
          for (int g = 0; g < gpus; ++g)
            b.message(step, hr.gpus[static_cast<std::size_t>(g)], hr.nvswitch, at(t), g > 0, channel);
        if (valid(t - 1)) b.message(step, hr.nvswitch, head, at(t - 1), false, channel);
        const int parent = tree.parent[static_cast<std::size_t>(h)];
        if (parent >= 0 && valid(t - 2 - th + d))  // up the host tree
          b.message(step, head, hosts[static_cast<std::size_t>(parent)].gpus[head_index], at(t - 2 - th + d), true,
                    channel);
        if (valid(t - 2 - th - d)) {  // the final sum down the tree and into the switch
          for (int c : tree.children[static_cast<std::size_t>(h)])
            b.message(step, head, hosts[static_cast<std::size_t>(c)].gpus[head_index], at(t - 2 - th - d), false,
                      channel);
          b.message(step, head, hr.nvswitch, at(t - 2 - th - d), false, channel);
        }
        if (valid(t - 3 - th - d))  // the switch writes it to the other GPUs
          for (int g : hr.gpus)
            if (g != head) b.message(step, hr.nvswitch, g, at(t - 3 - th - d), false, channel);
      }
    }
  }
  return b.finish();
}

int nccl_nvls_tree_depth(const RankLayout& layout, const AlgoOptions& options) {
  if (layout.nranks() < 2 || nccl_nvls_tree_not_applicable(layout, 0, options)) return 0;
  const int nhosts = layout.nhosts();
  return 1 + in_order_tree(nhosts).height;  // both trees have its height
}

std::size_t nccl_nvls_tree_pipeline_pieces(const RankLayout& layout, const AlgoOptions& options) {
  // A round is one chunk of every segment only when the chunk is the caller's (the default one
  // depends on the size); the segments are 2L whatever the number of hosts.
  if (options.chunk_elems == 0 || layout.nranks() < 2 || nccl_nvls_tree_not_applicable(layout, 0, options)) return 0;
  return 2 * (layout.ranks_on_host(0).size() - 1);
}

}  // namespace colltune::coll::algo
