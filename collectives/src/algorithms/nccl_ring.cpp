// nccl_ring: NCCL's ring allreduce, several channels at once. Channel c is one ring over all p
// ranks working on its own 1/k of the buffer (segment c of k), on op channel c, so that the
// simulator sends its messages between servers through the NIC NCCL assigns to channel c
// (topo::Topology::route).
//
// The ring of channel c visits the servers in host order; inside every server it visits the
// server's ranks in the order AlgoOptions::channel_orders[c] gives (local ranks, the same on
// every server, NCCL's ChannelPlan::orders): it enters a server at order[0] and leaves it from
// order[L-1]. Without orders (collectives/ knows no topology; sim/ passes NCCL's, see
// sim::nccl_channel_orders) there are L channels, channel c entering each server at local rank
// c+1 and leaving it from local rank c, so that the channels leave every server from every
// rank once (rail-aligned, as NCCL's rings are on servers with a NIC per GPU).
//
// Steps and bytes: every ring is the ring allreduce (ring_steps.cpp) on count/k elements, the k
// rings in lockstep: 2(p-1) steps per chunk round, each rank sending 2(p-1)/p n bytes in all,
// 2(p-1)/(pk) n per channel.
#include <algorithm>
#include <string>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {
namespace {

// The default orders: channel c is local ranks c+1, c+2, ..., c (mod L).
std::vector<std::vector<int>> rotated_orders(int per_host) {
  std::vector<std::vector<int>> orders(static_cast<std::size_t>(per_host));
  for (int c = 0; c < per_host; ++c)
    for (int i = 0; i < per_host; ++i) orders[static_cast<std::size_t>(c)].push_back((c + 1 + i) % per_host);
  return orders;
}

// Why `order` (channel c's) is not a permutation of 0..per_host-1, or empty.
std::string order_problem(const std::vector<int>& order, std::size_t c, int per_host) {
  const std::string what = "channel_orders[" + std::to_string(c) + "]";
  if (order.size() != static_cast<std::size_t>(per_host))
    return what + " lists " + std::to_string(order.size()) + " local ranks, a host has " + std::to_string(per_host);
  std::vector<bool> seen(static_cast<std::size_t>(per_host), false);
  for (int local : order) {
    if (local < 0 || local >= per_host)
      return what + ": local rank " + std::to_string(local) + " is not in 0.." + std::to_string(per_host - 1);
    if (seen[static_cast<std::size_t>(local)]) return what + ": local rank " + std::to_string(local) + " twice";
    seen[static_cast<std::size_t>(local)] = true;
  }
  return {};
}

}  // namespace

std::vector<std::vector<int>> nccl_orders(const RankLayout& layout, const AlgoOptions& options) {
  if (!options.channel_orders.empty()) return options.channel_orders;
  return rotated_orders(layout.nranks() == 0 ? 0 : layout.min_ranks_per_host());
}

std::optional<std::string> nccl_orders_problem(const RankLayout& layout, const AlgoOptions& options,
                                               std::size_t max_orders) {
  const int per_host = layout.min_ranks_per_host();
  if (options.channel_orders.size() > max_orders)
    return "channel_orders: " + std::to_string(options.channel_orders.size()) + " channels, at most " +
           std::to_string(max_orders);
  for (std::size_t c = 0; c < options.channel_orders.size(); ++c)
    if (std::string why = order_problem(options.channel_orders[c], c, per_host); !why.empty()) return why;
  return std::nullopt;
}

std::optional<std::string> nccl_ring_not_applicable(const RankLayout& layout, std::size_t /*count*/,
                                                    const AlgoOptions& options) {
  if (layout.nranks() == 0) return std::nullopt;
  if (!layout.is_uniform())
    return "needs the same number of ranks on every host (NCCL's rings visit every server alike)";
  return nccl_orders_problem(layout, options, kMaxNcclChannels);
}

std::vector<RingSpec> nccl_rings(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  const std::vector<std::vector<int>> orders = nccl_orders(layout, options);
  const auto k = static_cast<std::size_t>(orders.size());
  std::vector<RingSpec> rings;
  rings.reserve(k);
  for (std::size_t c = 0; c < k; ++c) {
    RingSpec ring{{}, segment_of(c, k, count), static_cast<int>(c)};
    ring.members.reserve(static_cast<std::size_t>(layout.nranks()));
    for (int h = 0; h < layout.nhosts(); ++h)
      for (int local : orders[c]) ring.members.push_back(layout.ranks_on_host(h)[static_cast<std::size_t>(local)]);
    rings.push_back(std::move(ring));
  }
  return rings;
}

int nccl_ring_channels(const RankLayout& layout, const AlgoOptions& options) {
  if (!options.channel_orders.empty()) return static_cast<int>(options.channel_orders.size());
  return layout.nranks() == 0 ? 0 : layout.min_ranks_per_host();
}

// The rings run in lockstep and, on uniform hosts, every step has one shape whatever the number
// of hosts: each host has k channels leaving and k entering it, each rank the same messages to
// its neighbours. So a step of p ranks costs what a step of two hosts costs, and the whole takes
// (p-1)/(2L-1) times what two hosts of L ranks take with the same segments (2(2L-1) steps per
// round instead of 2(p-1)). The two hosts are priced as a schedule (LevelCosts::price: no
// closed form for port sharing across channels); with segments all of the largest size, which
// makes the result exact for even sizes when every rank leaves its host on as many channels as
// every other (the default orders), and an upper bound otherwise. Two hosts or fewer, or no
// pricer: nullopt (the cost model prices the schedule itself).
std::optional<double> cost_nccl_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                     const AlgoOptions& options, const LevelCosts& costs) {
  const auto p = static_cast<std::size_t>(layout.nranks());
  if (p < 2 || bytes == 0) return 0.0;
  if (layout.nhosts() <= 2 || !costs.price) return std::nullopt;
  const auto per_host = static_cast<std::size_t>(layout.min_ranks_per_host());
  const auto k = static_cast<std::size_t>(nccl_ring_channels(layout, options));
  const std::size_t largest_channel = segment_of(0, k, elements_of(bytes, elem_size)).count;
  const std::size_t largest_segment = segment_of(0, p, largest_channel).count;
  const RankLayout two_hosts = RankLayout::uniform(2, static_cast<int>(per_host));
  const std::size_t two_host_count = largest_segment * k * 2 * per_host;
  // Where the network has groups of hosts, the two hosts sit in two groups, so every crossing
  // pays a trunk's share: an upper bound, exact when every host is a group. Every step of the
  // whole ring has a message between two near groups, so the two hosts take the worst latency.
  LevelCosts two_host_costs = costs;
  if (!costs.host_group.empty()) two_host_costs.host_group = {0, 1};
  two_host_costs.near_group.clear();
  const double two_host_time = costs.price(find_algorithm("nccl_ring"), two_hosts, two_host_count * elem_size,
                                           elem_size, options, two_host_costs);
  return two_host_time * static_cast<double>(p - 1) / static_cast<double>(2 * per_host - 1);
}

std::unique_ptr<StepSource> generate_nccl_ring(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  if (std::optional<std::string> why = nccl_ring_not_applicable(layout, count, options))
    throw Error("nccl_ring: " + *why);
  ScheduleHeader header{"nccl_ring", Collective::allreduce, layout.nranks(), count, {}};
  return generate_rings(std::move(header), nccl_rings(layout, count, options), options.chunk_elems,
                        RingShape::allreduce);
}

}  // namespace colltune::coll::algo
