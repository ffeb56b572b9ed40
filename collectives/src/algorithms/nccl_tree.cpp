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
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/algorithms/trees.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

// One channel: its rank tree over all p ranks, its segment and its op channel.
struct ChannelTree {
  std::vector<int> parent;                 // -1: the root
  std::vector<std::vector<int>> children;  // at most 3 (chain child, two host children)
  std::vector<int> depth;
  int height = 0;
  Block range;
  std::uint16_t channel = 0;
  std::size_t rounds = 0;
};

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

// Every message of channel `ct` at time step t: reduce up, then broadcast down.
void channel_messages(ScheduleBuilder& b, const ChannelTree& ct, long long t, std::size_t chunk_elems) {
  auto valid = [&](long long c) { return c >= 0 && c < static_cast<long long>(ct.rounds); };
  auto chunk = [&](long long c) { return chunk_of(ct.range, static_cast<std::size_t>(c), chunk_elems); };
  const long long h = ct.height;
  for (std::size_t r = 0; r < ct.parent.size(); ++r) {
    const long long d = ct.depth[r];
    const int me = static_cast<int>(r);
    if (ct.parent[r] >= 0 && valid(t - (h - d)))
      b.message(static_cast<int>(t), me, ct.parent[r], chunk(t - (h - d)), true, ct.channel);
    if (!valid(t - (h + d))) continue;
    for (int c : ct.children[r]) b.message(static_cast<int>(t), me, c, chunk(t - (h + d)), false, ct.channel);
  }
}

// Puts every rank's ops in each step in the order of (host tree, the rank's place in the
// channel's chain), channels in their order where those tie. The channels' own order (tree 0's
// chains, then tree 1's) would do as well, but on NCCL's rotated orders (chain c starts at GPU c:
// DGX hosts) turning every host's GPUs by one place turns chain c into chain c + 1, so a GPU's
// ops in channel order are the next GPU's rotated, and wherever a short last chunk meets full
// ones in a step they differ: in this order they are the same, and the reference pricer can run
// each host's first GPU only (sim/analytic/src/pricer_engine.hpp, fold). Only where every chain
// is the first one rotated over three GPUs or more: then two GPUs next to each other in a chain
// are so in one direction in every chain (the first before the second), so both ends of a message see a pair's ops in
// one order (the parent one place before the child; a head's ops to its parent host tie at the head's place and keep
// the channels' order). Chains that put a pair in both directions (a parent in one chain is the child in another: DGX
// A100's orders) keep the channels' order.
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

void order_by_chain_place(Schedule& schedule, const RankLayout& layout, const std::vector<std::vector<int>>& orders) {
  if (orders.empty() || !rotations_of_one_chain(orders)) return;
  const std::size_t k = orders.size();
  std::vector<std::vector<int>> place(k);  // place[c][local rank]: its place in chain c
  for (std::size_t c = 0; c < k; ++c) {
    place[c].assign(orders[c].size(), 0);
    for (std::size_t i = 0; i < orders[c].size(); ++i)
      place[c][static_cast<std::size_t>(orders[c][i])] = static_cast<int>(i);
  }
  for (std::size_t r = 0; r < schedule.ranks.size(); ++r) {
    const auto local = static_cast<std::size_t>(layout.local_rank(static_cast<int>(r)));
    const auto key = [&](const Op& op) {
      const std::size_t j = op.channel;
      return std::pair{j / k, place[j % k][local]};
    };
    // A step holds a few dozen ops: an insertion sort (stable, in place) costs less than
    // std::stable_sort's buffer.
    for (Step& step : schedule.ranks[r]) {
      std::vector<Op>& ops = step.ops;
      for (std::size_t i = 1; i < ops.size(); ++i) {
        const Op op = ops[i];
        const auto op_key = key(op);
        std::size_t j = i;
        for (; j > 0 && op_key < key(ops[j - 1]); --j) ops[j] = ops[j - 1];
        ops[j] = op;
      }
    }
  }
}

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

Schedule build_nccl_tree(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  if (std::optional<std::string> why = nccl_tree_not_applicable(layout, count, options))
    throw Error("nccl_tree: " + *why);
  ScheduleBuilder b("nccl_tree", Collective::allreduce, layout.nranks(), count);
  if (layout.nranks() < 2 || count == 0) return b.finish();
  const std::vector<ChannelTree> trees = channel_trees(layout, count, options);
  long long steps = 0;
  for (const ChannelTree& ct : trees) steps = std::max(steps, static_cast<long long>(ct.rounds) + 2LL * ct.height - 1);
  for (long long t = 0; t < steps; ++t)
    for (const ChannelTree& ct : trees) channel_messages(b, ct, t, options.chunk_elems);
  Schedule schedule = b.finish();
  order_by_chain_place(schedule, layout, nccl_orders(layout, options));
  return schedule;
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
