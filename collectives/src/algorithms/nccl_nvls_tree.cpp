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
#include <array>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

// The schedule, generated one step at a time (step_source.hpp; stored, it is materialize() of
// this). A rank's step t holds, segment by segment, its messages of that time step in the
// order the segment lists them: host by host, and in each host's turn (1) every GPU's chunk up
// into the switch (GPU 0 copied, the others reduced), (2) the switch's host sum to the head, (3)
// the head's partial sum up the host tree, (4) the head's final sum to its children hosts'
// heads and into its switch, (5) the switch's final sum to the other GPUs. A head also takes
// part in its parent host's turn (3 from its children's heads, 4 to it) and its children's.
class NvlsTreeSteps final : public StepSource {
 public:
  NvlsTreeSteps(ScheduleHeader header, const RankLayout& layout, std::size_t chunk_elems)
      : StepSource(std::move(header)) {
    const std::size_t count = this->header().count;
    if (this->header().nranks < 2 || count == 0) return;
    hosts_ = layout.nhosts();
    for (int h = 0; h < hosts_; ++h) {
      const std::vector<int>& ranks = layout.ranks_on_host(h);
      gpus_.emplace_back(ranks.begin(), ranks.end() - 1);
      switches_.push_back(ranks.back());
    }
    per_host_ = static_cast<int>(gpus_.front().size());
    place_.assign(static_cast<std::size_t>(layout.nranks()), Place{});
    for (int h = 0; h < hosts_; ++h) {
      for (int g = 0; g < per_host_; ++g) place_[static_cast<std::size_t>(gpu(h, g))] = Place{h, g};
      place_[static_cast<std::size_t>(switches_[static_cast<std::size_t>(h)])] = Place{h, -1};
    }
    trees_ = {double_tree(hosts_, 0), double_tree(hosts_, 1)};  // by host
    const auto segments = static_cast<std::size_t>(2 * per_host_);
    segments_.reserve(segments);
    for (std::size_t j = 0; j < segments; ++j) segments_.push_back(segment_of(j, segments, count));
    chunk_ = nvls_chunk_elems(segments_.front().count, chunk_elems);
    rounds_ = static_cast<long long>(chunk_count(segments_.front().count, chunk_));
    height_ = trees_[0].height;  // the second tree is the first relabelled
    steps_ = static_cast<std::size_t>(rounds_ + 2 * height_ + 3);
    layout_ = layout;
    const std::size_t segment = segments_.front().count;
    turns_ = count % segments == 0 && (rounds_ == 1 || segment % chunk_ == 0);
  }

  std::size_t num_steps(int /*rank*/) const override { return steps_; }

  // Turning every host's GPUs by one place (g to g + 1 mod L; the switch stays) maps segment
  // tree * L + g onto tree * L + g + 1: the same host tree, the head turned. Where every segment
  // has as many elements and every chunk of a segment as many as the others (no short last
  // chunk), every op of a time step moves a block of one size, so a turned GPU's step holds, per
  // peer and direction, as many ops of each kind as its own, and the switch's the same with GPU
  // 0's block copied where the others' are reduced (step_source.hpp).
  bool turns_with_hosts(const RankLayout& layout) const override { return turns_ && layout == layout_; }

  std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const override {
    scratch.clear();
    if (steps_ == 0) return scratch;
    const auto t = static_cast<long long>(step);
    const Place at = place_[static_cast<std::size_t>(rank)];
    for (std::size_t j = 0; j < segments_.size(); ++j) {
      if (at.gpu < 0) {
        switch_ops(j, at.host, t, scratch);
      } else {
        gpu_ops(j, at.host, at.gpu, t, scratch);
      }
    }
    return scratch;
  }

 private:
  struct Place {
    int host = 0;
    int gpu = -1;  // its place among the host's GPUs; -1: the host's switch
  };

  int gpu(int host, int g) const { return gpus_[static_cast<std::size_t>(host)][static_cast<std::size_t>(g)]; }
  int nvswitch(int host) const { return switches_[static_cast<std::size_t>(host)]; }
  const BinaryTree& tree_of(std::size_t j) const { return trees_[j / static_cast<std::size_t>(per_host_)]; }
  int head_of(std::size_t j) const { return static_cast<int>(j % static_cast<std::size_t>(per_host_)); }
  // Chunk c of segment j; empty when c is not a round (nothing is sent).
  Block chunk(std::size_t j, long long c) const {
    if (c < 0 || c >= rounds_) return Block{0, 0};
    return chunk_of(segments_[j], static_cast<std::size_t>(c), chunk_);
  }
  static void add(std::vector<Op>& out, OpKind kind, int peer, const Block& block, std::size_t j) {
    if (block.count > 0) out.emplace_back(kind, peer, block, static_cast<std::uint16_t>(j));
  }

  // The switch of host h in segment j: in its host's turn only.
  void switch_ops(std::size_t j, int h, long long t, std::vector<Op>& out) const {
    const BinaryTree& tree = tree_of(j);
    const int head = gpu(h, head_of(j));
    const long long d = tree.depth[static_cast<std::size_t>(h)];
    const long long th = tree.height;
    const Block up = chunk(j, t);
    for (int g = 0; g < per_host_; ++g) add(out, g > 0 ? OpKind::recv_reduce : OpKind::recv_copy, gpu(h, g), up, j);
    add(out, OpKind::send, head, chunk(j, t - 1), j);
    add(out, OpKind::recv_copy, head, chunk(j, t - 2 - th - d), j);
    const Block final_sum = chunk(j, t - 3 - th - d);
    for (int g = 0; g < per_host_; ++g)
      if (g != head_of(j)) add(out, OpKind::send, gpu(h, g), final_sum, j);
  }

  // GPU g of host h in segment j: the turns of its host and, if it is the segment's head there,
  // of its parent and children hosts, in host order.
  void gpu_ops(std::size_t j, int h, int g, long long t, std::vector<Op>& out) const {
    const bool head = g == head_of(j);
    if (!head) {
      // Its host's turn alone: its chunk up, the final sum back.
      const long long d = tree_of(j).depth[static_cast<std::size_t>(h)];
      add(out, OpKind::send, nvswitch(h), chunk(j, t), j);
      add(out, OpKind::recv_copy, nvswitch(h), chunk(j, t - 3 - tree_of(j).height - d), j);
      return;
    }
    const BinaryTree& tree = tree_of(j);
    const long long th = tree.height;
    const int parent = tree.parent[static_cast<std::size_t>(h)];
    const std::vector<int>& children = tree.children[static_cast<std::size_t>(h)];
    // The hosts whose turns hold its ops, in host order: its parent, its children, itself.
    std::array<int, 4> turns{};
    std::size_t n = 0;
    const auto turn = [&](int host) {
      std::size_t i = n++;
      for (; i > 0 && host < turns[i - 1]; --i) turns[i] = turns[i - 1];
      turns[i] = host;
    };
    turn(h);
    if (parent >= 0) turn(parent);
    for (int c : children) turn(c);
    for (std::size_t i = 0; i < n; ++i) {
      const int host = turns[i];
      const long long d = tree.depth[static_cast<std::size_t>(host)];
      const int other_head = gpu(host, g);
      if (host == parent) {  // (4) of the parent's turn: its final sum down to this head
        add(out, OpKind::recv_copy, other_head, chunk(j, t - 2 - th - d), j);
      } else if (host != h) {  // (3) of a child's turn: its partial sum up to this head
        add(out, OpKind::recv_reduce, other_head, chunk(j, t - 2 - th + d), j);
      } else {
        // Its own host's turn: (1) its chunk up, (2) the host sum back, (3) its partial sum up
        // the host tree, (4) the final sum down to its children hosts' heads and its switch.
        add(out, OpKind::send, nvswitch(h), chunk(j, t), j);
        add(out, OpKind::recv_copy, nvswitch(h), chunk(j, t - 1), j);
        if (parent >= 0) add(out, OpKind::send, gpu(parent, g), chunk(j, t - 2 - th + d), j);
        const Block final_sum = chunk(j, t - 2 - th - d);
        for (int c : children) add(out, OpKind::send, gpu(c, g), final_sum, j);
        add(out, OpKind::send, nvswitch(h), final_sum, j);
      }
    }
  }

  int hosts_ = 0;
  int per_host_ = 0;
  std::vector<std::vector<int>> gpus_;  // per host, its GPUs
  std::vector<int> switches_;           // per host, its switch
  std::vector<Place> place_;            // per rank
  std::array<BinaryTree, 2> trees_;
  std::vector<Block> segments_;
  std::size_t chunk_ = 0;
  long long rounds_ = 0;
  long long height_ = 0;
  std::size_t steps_ = 0;
  RankLayout layout_;   // the one it was made for (turns_with_hosts)
  bool turns_ = false;  // equal segments in equal chunks (turns_with_hosts)
};

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

std::unique_ptr<StepSource> generate_nccl_nvls_tree(const RankLayout& layout, std::size_t count,
                                                    const AlgoOptions& options) {
  if (std::optional<std::string> why = nccl_nvls_tree_not_applicable(layout, count, options))
    throw Error("nccl_nvls_tree: " + *why);
  if (layout.nranks() <= 0)
    throw Error("algorithm 'nccl_nvls_tree': needs at least one rank (got " + std::to_string(layout.nranks()) + ")");
  ScheduleHeader header{"nccl_nvls_tree", Collective::allreduce, layout.nranks(), count, {}};
  // The switches are helpers (Schedule::helpers); a GPU alone has none and nothing to reduce.
  if (layout.nranks() >= 2) header.helpers = layout.nhosts();
  return std::make_unique<NvlsTreeSteps>(std::move(header), layout, options.chunk_elems);
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
