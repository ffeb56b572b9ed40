// nccl_tree: NCCL's tree allreduce (NCCL_ALGO_TREE), as NCCL connects it (src/graph/connect.cc,
// trees.cc) and runs it (src/device/all_reduce.h).
//
// Channels. The k chain orders (AlgoOptions::channel_orders, the tree search's intra orders, or
// nccl_orders' default) give 2k channels: channel c < k runs host tree 0 over chain c, channel
// c + k host tree 1 over the same chain (ncclTopoPreset copies channel c to c + k, connectTrees
// gives the copies the second tree). Channel j reduces and broadcasts segment j of 2k of the
// buffer; its ops carry channel j, so the simulator sends its host crossings through the NIC
// NCCL assigns to channel j (topo::Topology::nic_for_channel).
//
// One channel's tree over the ranks:
//  - inside every host, a chain following the order: order[i]'s parent is order[i-1], so the
//    chain reduces towards order[0], the head;
//  - across hosts, the host tree (tree 0: in_order_tree over the hosts, NCCL's btree; tree 1:
//    its mirror for an even number of hosts, its shift by one for an odd one, second_tree_rank):
//    a host's head sends to a rank of its parent host. With NCCL's BALANCED_TREE pattern a
//    host's first child (the smaller position) attaches to order[1] and its second to the head
//    order[0], so the NIC traffic of a host spreads over two GPUs; with the TREE pattern
//    (AlgoOptions::nccl_simple_tree, and always with one rank per host) both attach to the head.
//
// Steps. NCCL runs the reduction up and the broadcast down at once, on separate threads
// (runTreeSplit; runTreeUpDown, one after the other, only on CUDA 11.2-11.3 with sm80). Here as
// in dbtree: every channel's segment is cut into R chunks of chunk_elems, the tree of height H,
// and in time step t = 0..R+2H-2 a rank at depth d >= 1 sends chunk t-(H-d) to its parent,
// which reduces it (its children delivered that chunk one step earlier), and a rank at depth d
// sends chunk t-(H+d) to its children, which copy it. All channels run in lockstep.
//
// Bytes, with n_j = n/(2k) per channel: every rank but a channel's root sends n_j up and
// receives n_j down, and a rank with c children receives c n_j and sends c n_j more. A rank
// inside a chain (one child) sends and receives 2 n_j per channel, about 2n in all. Across
// hosts, a host sends n_j up and n_j to each child host: a host that is a leaf in one tree
// and has two children in the other sends 4 n_j per channel pair, so every host's NICs carry
// about 2n out and 2n in, as a ring's do.
#include <algorithm>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

// One channel: its rank tree over all p ranks (chains of at most one child and two host
// children), its segment and its op channel.
using ChannelTree = PipelinedTree;

// Depths from the root down (parents are set; children derived here).
void finish_tree(ChannelTree& ct) {
  const std::size_t p = ct.parent.size();
  ct.children.assign(p, {});
  ct.depth.assign(p, 0);
  int root = -1;
  for (std::size_t r = 0; r < p; ++r) {
    if (ct.parent[r] < 0)
      root = static_cast<int>(r);
    else
      ct.children[static_cast<std::size_t>(ct.parent[r])].push_back(static_cast<int>(r));
  }
  std::vector<int> work{root};
  while (!work.empty()) {
    const int v = work.back();
    work.pop_back();
    for (int c : ct.children[static_cast<std::size_t>(v)]) {
      ct.depth[static_cast<std::size_t>(c)] = ct.depth[static_cast<std::size_t>(v)] + 1;
      ct.height = std::max(ct.height, ct.depth[static_cast<std::size_t>(c)]);
      work.push_back(c);
    }
  }
}

// The position in parent host position `up`'s chain that host position v's head attaches to:
// in NCCL's BALANCED_TREE pattern a first child (a position below its parent's) attaches to the
// second rank of the chain, so a host's NIC traffic spreads over two GPUs; everything else, and
// every child in the TREE pattern or with one rank per host, to the head.
std::size_t attach_position(int v, int up, std::size_t per_host, bool simple) {
  return !simple && per_host >= 2 && v < up ? 1 : 0;
}

// The rank tree of host tree `tree` (0 or 1) over the chain `order`.
ChannelTree channel_tree(const RankLayout& layout, const std::vector<int>& order, int tree, bool simple) {
  const int nhosts = layout.nhosts();
  const auto per_host = order.size();
  auto rank_at = [&](int host, std::size_t i) {
    return layout.ranks_on_host(host)[static_cast<std::size_t>(order[i])];
  };
  ChannelTree ct;
  ct.parent.assign(static_cast<std::size_t>(layout.nranks()), -1);
  for (int h = 0; h < nhosts; ++h)
    for (std::size_t i = 1; i < per_host; ++i) ct.parent[static_cast<std::size_t>(rank_at(h, i))] = rank_at(h, i - 1);
  const BinaryTree hosts = in_order_tree(nhosts);
  for (int v = 1; v < nhosts; ++v) {
    const int up = hosts.parent[static_cast<std::size_t>(v)];
    const int host = double_tree_rank(tree, v, nhosts);
    const int parent_host = double_tree_rank(tree, up, nhosts);
    ct.parent[static_cast<std::size_t>(rank_at(host, 0))] =
        rank_at(parent_host, attach_position(v, up, per_host, simple));
  }
  finish_tree(ct);
  return ct;
}

std::vector<ChannelTree> channel_trees(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  const std::vector<std::vector<int>> orders = nccl_orders(layout, options);
  const std::size_t k = orders.size();
  std::vector<ChannelTree> trees;
  trees.reserve(2 * k);
  for (std::size_t j = 0; j < 2 * k; ++j) {
    ChannelTree ct = channel_tree(layout, orders[j % k], static_cast<int>(j / k), options.nccl_simple_tree);
    ct.range = segment_of(j, 2 * k, count);
    ct.channel = static_cast<std::uint16_t>(j);
    ct.rounds = chunk_count(ct.range.count, options.chunk_elems);
    trees.push_back(std::move(ct));
  }
  return trees;
}

// Whether every chain is the first one rotated, over three GPUs or more: only then are a step's
// ops put in the order of (host tree, chain place) (channel_order; why: NcclTreeSteps). Then two GPUs
// next to each other in a chain are so in one direction in every chain (the first before the
// second), so both ends of a message see a pair's ops in one order (the parent one place before
// the child; a head's ops to its parent host tie at the head's place and keep the channels'
// order). Chains that put a pair in both directions (a parent in one chain is the child in
// another: DGX A100's orders) keep the channels' order.
bool rotations_of_one_chain(const std::vector<std::vector<int>>& orders) {
  const std::vector<int>& first = orders.front();
  const std::size_t n = first.size();
  if (n < 3) return false;  // two GPUs: each is the other's successor, both ways
  for (const std::vector<int>& order : orders) {
    if (order.size() != n) return false;
    const auto shift = static_cast<std::size_t>(std::find(first.begin(), first.end(), order.front()) - first.begin());
    for (std::size_t i = 0; i < n; ++i)
      if (shift == n || order[i] != first[(i + shift) % n]) return false;
  }
  return true;
}

// The order in which a rank at local rank l lists its channels' ops: by (host tree, l's place in
// the channel's chain), channels in their order where those tie, where every chain is the first
// rotated (rotations_of_one_chain); else the channels' order. One order per local rank.
std::vector<std::vector<std::uint16_t>> channel_order(const std::vector<std::vector<int>>& orders,
                                                      std::size_t per_host) {
  const std::size_t k = orders.size();
  std::vector<std::uint16_t> channels(2 * k);
  for (std::size_t j = 0; j < 2 * k; ++j) channels[j] = static_cast<std::uint16_t>(j);
  if (k == 0 || !rotations_of_one_chain(orders)) return {channels};
  std::vector<std::vector<std::uint16_t>> by_local(per_host, channels);
  for (std::size_t l = 0; l < per_host; ++l) {
    std::vector<int> place(k);  // l's place in chain c
    for (std::size_t c = 0; c < k; ++c)
      place[c] =
          static_cast<int>(std::find(orders[c].begin(), orders[c].end(), static_cast<int>(l)) - orders[c].begin());
    std::stable_sort(by_local[l].begin(), by_local[l].end(), [&](std::uint16_t x, std::uint16_t y) {
      return std::pair{x / k, place[x % k]} < std::pair{y / k, place[y % k]};
    });
  }
  return by_local;
}

// The schedule, generated one step at a time (step_source.hpp; stored, it is materialize() of
// this). A rank's step t holds, channel by channel, its messages of that time step
// (PipelinedTree::ops), in the order the channel lists them: by sender, a sender's message up
// before its messages down, children in rank order.
//
// The channels are taken in the order channel_order gives: where every chain is one rotated, by
// (host tree, the rank's place in the channel's chain), channels in their order where those
// tie. The channels' own order would do as well, but on NCCL's rotated orders (chain c starts at GPU c: DGX hosts)
// turning every host's GPUs by one place turns chain c into chain c + 1, so a GPU's ops in
// channel order are the next GPU's rotated, and wherever a short last chunk meets full ones in a
// step they differ: in this order they are the same, and the reference pricer can run each
// host's first GPU only (sim/analytic/src/pricer_engine.hpp, fold).
class NcclTreeSteps final : public StepSource {
 public:
  // `order`: channel_order's orders, one for every local rank or one for all.
  NcclTreeSteps(ScheduleHeader header, const RankLayout& layout, std::vector<ChannelTree> trees,
                std::size_t chunk_elems, std::vector<std::vector<std::uint16_t>> order)
      : StepSource(std::move(header)),
        layout_(layout),
        trees_(std::move(trees)),
        chunk_(chunk_elems),
        order_(std::move(order)) {
    for (const ChannelTree& ct : trees_)
      steps_ = std::max(steps_, ct.rounds == 0 ? 0 : ct.rounds + 2 * static_cast<std::size_t>(ct.height) - 1);
    turns_ = channels_turn();
  }

  std::size_t num_steps(int /*rank*/) const override { return steps_; }

  bool turns_with_hosts(const RankLayout& layout) const override { return turns_ && layout == layout_; }

  std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const override {
    scratch.clear();
    if (trees_.empty()) return scratch;
    const std::vector<std::uint16_t>& channels =
        order_.size() == 1 ? order_.front() : order_[static_cast<std::size_t>(layout_.local_rank(rank))];
    for (std::uint16_t j : channels) trees_[j].ops(rank, static_cast<long long>(step), chunk_, scratch);
    return scratch;
  }

 private:
  // The rank one place after r on its host, turning (turns_with_hosts).
  int turned(int r) const {
    const std::vector<int>& on = layout_.ranks_on_host(layout_.host_of(r));
    const auto next = static_cast<std::size_t>(layout_.local_rank(r)) + 1;
    return on[next == on.size() ? 0 : next];
  }

  // turns_with_hosts, proven on the channels: turning every host's ranks by one place (t) maps
  // each channel j onto a channel u(j) of the same host tree, as trees (parent of t(r) in u(j)
  // is t(parent of r in j)) and segments (as many elements, so the same chunks), and a rank's
  // channel order onto the next local rank's (order_[l + 1] is u of order_[l], place by place).
  // Then t(r)'s step s lists, channel by channel, r's ops with peers turned: per peer and
  // direction a channel has one op, so each pair's ops keep their order.
  bool channels_turn() const {
    const std::size_t per_host = layout_.ranks_on_host(0).size();
    if (trees_.empty() || per_host < 2 || order_.size() != per_host || !layout_.is_uniform()) return false;
    std::vector<std::size_t> u(trees_.size(), trees_.size());
    for (std::size_t l = 0; l < per_host; ++l) {
      const std::vector<std::uint16_t>& mine = order_[l];
      const std::vector<std::uint16_t>& next = order_[(l + 1) % per_host];
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (u[mine[i]] == trees_.size()) u[mine[i]] = next[i];
        if (u[mine[i]] != next[i]) return false;
      }
    }
    for (std::size_t j = 0; j < trees_.size(); ++j) {
      const ChannelTree& from = trees_[j];
      const ChannelTree& to = trees_[u[j]];
      if (from.range.count != to.range.count) return false;
      for (std::size_t r = 0; r < from.parent.size(); ++r) {
        const int up = from.parent[r];
        if (to.parent[static_cast<std::size_t>(turned(static_cast<int>(r)))] != (up < 0 ? -1 : turned(up)))
          return false;
      }
    }
    return true;
  }

  RankLayout layout_;
  std::vector<ChannelTree> trees_;
  std::size_t chunk_ = 0;
  std::vector<std::vector<std::uint16_t>> order_;  // channel_order
  std::size_t steps_ = 0;
  bool turns_ = false;  // channels_turn()
};

}  // namespace

std::optional<std::string> nccl_tree_not_applicable(const RankLayout& layout, std::size_t /*count*/,
                                                    const AlgoOptions& options) {
  if (layout.nranks() == 0) return std::nullopt;
  if (!layout.is_uniform())
    return "needs the same number of ranks on every host (NCCL's chains follow one order on every server)";
  return nccl_orders_problem(layout, options, kMaxNcclChannels / 2);
}

int nccl_tree_channels(const RankLayout& layout, const AlgoOptions& options) {
  return 2 * static_cast<int>(nccl_orders(layout, options).size());
}

std::unique_ptr<StepSource> generate_nccl_tree(const RankLayout& layout, std::size_t count,
                                               const AlgoOptions& options) {
  if (std::optional<std::string> why = nccl_tree_not_applicable(layout, count, options))
    throw Error("nccl_tree: " + *why);
  if (layout.nranks() <= 0)
    throw Error("algorithm 'nccl_tree': needs at least one rank (got " + std::to_string(layout.nranks()) + ")");
  ScheduleHeader header{"nccl_tree", Collective::allreduce, layout.nranks(), count, {}};
  if (layout.nranks() < 2 || count == 0)
    return std::make_unique<NcclTreeSteps>(std::move(header), layout, std::vector<ChannelTree>{}, 0,
                                           std::vector<std::vector<std::uint16_t>>{});
  return std::make_unique<NcclTreeSteps>(std::move(header), layout, channel_trees(layout, count, options),
                                         options.chunk_elems,
                                         channel_order(nccl_orders(layout, options), layout.ranks_on_host(0).size()));
}

std::size_t nccl_tree_pipeline_pieces(const RankLayout& layout, const AlgoOptions& options) {
  return static_cast<std::size_t>(nccl_tree_channels(layout, options));
}

// The height without building the trees (on 4,096 ranks building the trees' 2k children lists
// was a seventh of an NCCL price at 1 MiB, which asks for it to size its settling search): a
// rank at chain position i sits i below its host's head, and a host head one below the rank it
// attaches to, at its parent host's attach_position.
// The chain's order does not move a position, and both host trees are one shape over
// permuted hosts, so every channel has the height of host tree 0 over any chain.
int nccl_tree_depth(const RankLayout& layout, const AlgoOptions& options) {
  if (layout.nranks() < 2 || nccl_tree_not_applicable(layout, 0, options)) return 0;
  const std::size_t per_host = layout.ranks_on_host(0).size();
  const BinaryTree hosts = in_order_tree(layout.nhosts());
  // head[v]: the depth of host position v's head, from the root (position 0) down.
  std::vector<int> head(static_cast<std::size_t>(layout.nhosts()), 0);
  int deepest_head = 0;
  std::vector<int> work{0};
  while (!work.empty()) {
    const int up = work.back();
    work.pop_back();
    for (int v : hosts.children[static_cast<std::size_t>(up)]) {
      head[static_cast<std::size_t>(v)] = head[static_cast<std::size_t>(up)] +
                                          static_cast<int>(attach_position(v, up, per_host, options.nccl_simple_tree)) +
                                          1;
      deepest_head = std::max(deepest_head, head[static_cast<std::size_t>(v)]);
      work.push_back(v);
    }
  }
  return deepest_head + static_cast<int>(per_host) - 1;
}

}  // namespace colltune::coll::algo
