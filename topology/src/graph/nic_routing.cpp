// The NIC a rank's messages to other hosts use on each channel, as NCCL chooses it, and the
// routes through those NICs (Topology::route(), topology.hpp).
//
// NCCL (src/graph/topo.cc, ncclTopoGetLocalNetType with NCCL_NETDEVS_POLICY=AUTO) gives each
// GPU the NICs with its best path ("local" NICs), and spreads the GPUs that share those NICs
// over them: channel c of a GPU uses local NIC (start + c % nets_per_gpu) % L. NCCL's notions
// map onto the device graph as follows:
//  - a path's bandwidth is its widest bottleneck over paths inside the host; its type (PIX, PXB,
//    PHB, SYS: how many bridges it crosses) is the fewest hops among the paths that wide;
//    "best" is the highest bandwidth, then the fewest hops (Nearness below);
//  - the host's NICs are its devices of kind nic with a link to or from outside the host (a
//    network port), in device order (NCCL lists them in its node order);
//  - a GPU is a device a rank of the host runs on; its "dev" (NCCL: the CUDA device index) is
//    its index among those devices in rank order.
// Searches for the rule stay inside the host (small graphs); the route legs use route()'s
// bidirectional search confined to a Region (route_cache.hpp).
#include <algorithm>
#include <limits>
#include <queue>
#include <utility>

#include "colltune/common/error.hpp"
#include "colltune/topology/graph.hpp"
#include "graph/route_cache.hpp"

namespace colltune::topo {
namespace {

constexpr int kFarHops = std::numeric_limits<int>::max();

// How near one device is to another inside their host (see the top of the file).
struct Nearness {
  double gbps = 0;  // 0: not reachable inside the host
  int hops = kFarHops;
  bool operator==(const Nearness&) const = default;
};
bool nearer(const Nearness& a, const Nearness& b) { return a.gbps > b.gbps || (a.gbps == b.gbps && a.hops < b.hops); }

// One host's devices and the links among them, in the host's local numbering.
class HostGraph {
 public:
  HostGraph(const Topology& t, const HostIndex& index, int host)
      : t_(t),
        g_(graph_of(t)),
        local_(index.local),
        devices_(index.devices[static_cast<std::size_t>(host)]),
        host_(host) {}

  // Nearness from `from` to each of `targets` (devices of the host).
  std::vector<Nearness> nearness(VertexId from, const std::vector<VertexId>& targets) const {
    const std::vector<double> width = widest_from(from);
    std::vector<Nearness> out(targets.size());
    for (std::size_t i = 0; i < targets.size(); ++i) out[i].gbps = width[local_[targets[i]]];
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (out[i].gbps <= 0 || out[i].hops != kFarHops) continue;
      const std::vector<int> hops = hops_from(from, out[i].gbps);  // once per distinct width
      for (std::size_t j = i; j < targets.size(); ++j)
        if (out[j].gbps == out[i].gbps) out[j].hops = hops[local_[targets[j]]];
    }
    return out;
  }

 private:
  template <typename Visit>
  void each_link_from(VertexId v, Visit visit) const {
    for (auto [it, end] = boost::out_edges(v, g_); it != end; ++it) {
      const VertexId w = boost::target(*it, g_);
      if (g_[w].host == host_) visit(w, t_.bandwidth_of(g_[*it]));
    }
  }

  // The widest bottleneck from `from` to every device of the host (Dijkstra on max-min).
  std::vector<double> widest_from(VertexId from) const {
    std::vector<double> width(devices_.size(), 0.0);
    std::priority_queue<std::pair<double, VertexId>> queue;
    width[local_[from]] = std::numeric_limits<double>::infinity();
    queue.emplace(width[local_[from]], from);
    while (!queue.empty()) {
      const auto [w, v] = queue.top();
      queue.pop();
      if (w < width[local_[v]]) continue;  // a stale entry
      each_link_from(v, [&](VertexId next, double gbps) {
        const double through = std::min(w, gbps);
        if (through > width[local_[next]]) {
          width[local_[next]] = through;
          queue.emplace(through, next);
        }
      });
    }
    return width;
  }

  // Fewest hops from `from` to every device of the host over links at least `min_gbps` wide.
  std::vector<int> hops_from(VertexId from, double min_gbps) const {
    std::vector<int> hops(devices_.size(), kFarHops);
    std::queue<VertexId> queue;
    hops[local_[from]] = 0;
    queue.push(from);
    while (!queue.empty()) {
      const VertexId v = queue.front();
      queue.pop();
      each_link_from(v, [&](VertexId next, double gbps) {
        if (gbps < min_gbps || hops[local_[next]] != kFarHops) return;
        hops[local_[next]] = hops[local_[v]] + 1;
        queue.push(next);
      });
    }
    return hops;
  }

  const Topology& t_;  // reads a scaled copy's bandwidths (Topology::bandwidth_of)
  const Graph& g_;
  const std::vector<std::uint32_t>& local_;
  const std::vector<VertexId>& devices_;
  int host_;
};

// The indices of `near` that are nearest (and reachable); empty when none is reachable.
std::vector<std::size_t> nearest(const std::vector<Nearness>& near) {
  std::vector<std::size_t> best;
  for (std::size_t i = 0; i < near.size(); ++i) {
    if (near[i].gbps <= 0) continue;
    if (!best.empty() && nearer(near[best.front()], near[i])) continue;
    if (!best.empty() && !(near[i] == near[best.front()])) best.clear();
    best.push_back(i);
  }
  return best;
}

// `value` with its low log2(pow2) bits in reverse order (pow2 a power of two): NCCL spreads the
// starting NICs of neighbouring GPUs apart this way.
int reverse_low_bits(int value, int pow2) {
  int reversed = 0;
  for (int bit = 1, mirror = pow2 >> 1; bit < pow2; bit <<= 1, mirror >>= 1)
    if ((value & bit) != 0) reversed |= mirror;
  return reversed;
}
bool power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// The NICs of `host` with a network port: a link to or from a device outside the host.
std::vector<VertexId> network_nics(const Graph& g, const std::vector<VertexId>& devices, int host) {
  std::vector<VertexId> nics;
  for (VertexId v : devices) {
    if (g[v].kind != DeviceKind::nic) continue;
    bool port = false;
    for (auto [it, end] = boost::out_edges(v, g); it != end && !port; ++it) port = g[boost::target(*it, g)].host != host;
    for (auto [it, end] = boost::in_edges(v, g); it != end && !port; ++it) port = g[boost::source(*it, g)].host != host;
    if (port) nics.push_back(v);
  }
  return nics;
}

}  // namespace

// The index, built once (O(devices + ranks)).
const HostIndex& host_index(const Topology& t, std::optional<HostIndex>& slot) {
  if (slot) return *slot;
  HostIndex index;
  const auto hosts = static_cast<std::size_t>(t.num_hosts());
  index.devices.resize(hosts);
  index.local.assign(t.num_devices(), 0);
  index.ranks.resize(hosts);
  for (VertexId v = 0; v < t.num_devices(); ++v) {
    const int h = t.device(v).host;
    if (h < 0 || h >= t.num_hosts()) continue;  // outside every host (or not validated yet)
    index.local[v] = static_cast<std::uint32_t>(index.devices[static_cast<std::size_t>(h)].size());
    index.devices[static_cast<std::size_t>(h)].push_back(v);
  }
  for (int r = 0; r < t.num_ranks(); ++r) {
    int h = t.host_of_rank(r);
    if (h >= t.num_hosts()) h = -1;
    index.rank_host.push_back(h);
    if (h >= 0) index.ranks[static_cast<std::size_t>(h)].push_back(r);
  }
  return slot.emplace(std::move(index));
}

namespace {

HostNics host_nics(const Topology& t, const HostIndex& index, int host) {
  HostNics out;
  out.nics = network_nics(graph_of(t), index.devices[static_cast<std::size_t>(host)], host);
  for (int r : index.ranks[static_cast<std::size_t>(host)])
    if (std::find(out.gpus.begin(), out.gpus.end(), t.device_of_rank(r)) == out.gpus.end())
      out.gpus.push_back(t.device_of_rank(r));
  return out;
}

// NCCL's rule for the GPU `gpu` of the host (see the top of the file).
NicPlan plan_gpu(const HostGraph& host, HostNics& hn, VertexId gpu) {
  NicPlan plan;
  for (std::size_t i : nearest(host.nearness(gpu, hn.nics))) plan.nics.push_back(hn.nics[i]);
  if (plan.nics.empty()) return plan;
  const VertexId first = plan.nics.front();
  auto it = std::find_if(hn.sharing.begin(), hn.sharing.end(), [&](const auto& s) { return s.first == first; });
  if (it == hn.sharing.end()) {
    // NCCL's localGpuCount; at least 1 (a NIC that reaches no GPU back leaves its GPU alone)
    const int count = static_cast<int>(nearest(host.nearness(first, hn.gpus)).size());
    it = hn.sharing.insert(hn.sharing.end(), {first, std::max(1, count)});
  }
  const int gpus_sharing = it->second;
  const auto local = static_cast<int>(plan.nics.size());
  const auto dev = static_cast<int>(std::find(hn.gpus.begin(), hn.gpus.end(), gpu) - hn.gpus.begin());
  plan.start = dev % gpus_sharing;
  if (power_of_two(plan.nics.size())) plan.start = reverse_low_bits(plan.start, local);
  plan.per_gpu = (local + gpus_sharing - 1) / gpus_sharing;
  return plan;
}

}  // namespace

const NicPlan& Topology::nic_plan(int rank) const {
  RouteCache& c = cache();
  const HostIndex& index = host_index(*this, c.index);
  if (c.plans.empty()) {
    c.plans.resize(static_cast<std::size_t>(num_ranks()));
    c.hosts.resize(static_cast<std::size_t>(num_hosts()));
  }
  std::optional<NicPlan>& mine = c.plans[static_cast<std::size_t>(rank)];
  if (mine) return *mine;
  const int host = index.rank_host[static_cast<std::size_t>(rank)];
  if (host < 0) return mine.emplace();
  std::optional<HostNics>& hn = c.hosts[static_cast<std::size_t>(host)];
  if (!hn) hn = host_nics(*this, index, host);
  if (hn->nics.empty()) return mine.emplace();
  return mine.emplace(plan_gpu(HostGraph(*this, index, host), *hn, device_of_rank(rank)));
}

// The leg between a GPU and a NIC of its host (searched inside the host) or between two NICs
// of different hosts (searched through the network), cached.
const std::optional<Path>& Topology::leg(VertexId from, VertexId to) const {
  LegCache& shared = *legs_;
  return shared_search(shared.mutex, shared.legs, device_pair_key(from, to), [&] {
    Region region;
    if (store_->graph[from].host == store_->graph[to].host) {
      region.kind = Region::Kind::host;
      region.host = store_->graph[from].host;
    } else {
      region.kind = Region::Kind::network;
      region.from = from;
      region.to = to;
    }
    std::optional<Path> path;
    if (std::optional<std::vector<EdgeId>> found = cheapest_route(store_->graph, from, to, region, cache().scratch))
      path = path_of(*this, *found);
    return path;
  });
}

namespace {

// The one link a network leg between NICs `nic` and `other` may take out of `nic` (Side::out)
// or into it (Side::in), where there is exactly one (a link to or from a device outside every
// host, or the other NIC: the links Region::network allows) and it leads to or comes from a
// switch; nullopt otherwise.
enum class Side { out, in };
std::optional<EdgeId> sole_switch_link(const Graph& g, VertexId nic, VertexId other, Side side) {
  std::optional<EdgeId> found;
  const auto consider = [&](const EdgeId& e, VertexId far) {
    if (far != other && g[far].host >= 0) return true;  // a device of a host: no way for the leg
    if (found || g[far].host >= 0) return false;        // a second way out, or the other NIC itself
    found = e;
    return true;
  };
  if (side == Side::out) {
    for (auto [it, end] = boost::out_edges(nic, g); it != end; ++it)
      if (!consider(*it, boost::target(*it, g))) return std::nullopt;
  } else {
    for (auto [it, end] = boost::in_edges(nic, g); it != end; ++it)
      if (!consider(*it, boost::source(*it, g))) return std::nullopt;
  }
  return found;
}

}  // namespace

// The cheapest path between two switches through the network (devices outside every host),
// cached and shared as the legs are (cache().mutex held).
const std::optional<std::vector<std::size_t>>& Topology::between_switches(VertexId from, VertexId to) const {
  LegCache& shared = *legs_;
  return shared_search(shared.mutex, shared.between_switches, device_pair_key(from, to), [&] {
    std::optional<std::vector<std::size_t>> links;
    const Region network{Region::Kind::network, -1, from, to};
    if (from == to) {
      links.emplace();  // one switch: nothing between
    } else if (std::optional<std::vector<EdgeId>> found =
                   cheapest_route(store_->graph, from, to, network, cache().scratch)) {
      links.emplace();
      for (auto it = found->rbegin(); it != found->rend(); ++it) links->push_back(store_->graph[*it].index);
    }
    return links;
  });
}

// The network leg from NIC `from` to NIC `to` is leg()'s: the cheapest path through the network
// and, among equally cheap ones, the one Dijkstra records (routing.cpp: from the destination,
// each vertex's cheapest tight predecessor in turn). Where `from` has one way into the network, a
// link to switch A, and `to` one way out of it, a link from switch B, that path is
// from -> A, then A's to B, then B -> to, and A's path to B is the same for every pair of NICs
// on those two switches: found once per pair of switches. Why it is the same path: every path
// from `from` starts with its one link, so costs from `from` are costs from A plus that link's,
// in the same order, with the same tight predecessors; `to`'s only predecessor is B; and neither
// NIC lies on a cheapest path between the switches (a path through `from` comes back to A, one
// through `to` has passed B), so a search kept to the switches finds A's path to B as one that
// may also pass the two NICs does. On a fat-tree of 2,048 servers with a NIC per GPU, rhd's
// 180,224 NIC pairs (64 MiB, 16,384 ranks) meet 5,120 pairs of leaf switches.
bool Topology::append_network_leg(VertexId from, VertexId to, std::vector<std::size_t>& links) const {
  const Graph& g = store_->graph;
  const std::optional<EdgeId> up = sole_switch_link(g, from, to, Side::out);
  const std::optional<EdgeId> down = up ? sole_switch_link(g, to, from, Side::in) : std::nullopt;
  if (up && down) {
    const std::optional<std::vector<std::size_t>>& middle =
        between_switches(boost::target(*up, g), boost::source(*down, g));
    if (!middle) return false;
    links.push_back(g[*up].index);
    links.insert(links.end(), middle->begin(), middle->end());
    links.push_back(g[*down].index);
    return true;
  }
  const std::optional<Path>& across = leg(from, to);
  if (!across) return false;
  links.insert(links.end(), across->links.begin(), across->links.end());
  return true;
}

const Path* Topology::nic_route(int src_rank, int dst_rank, int channel) const {
  RouteCache& c = cache();
  const VertexId s = rank_device_[static_cast<std::size_t>(src_rank)];
  const VertexId d = rank_device_[static_cast<std::size_t>(dst_rank)];
  const NicPlan& from = nic_plan(src_rank);
  const NicPlan& to = nic_plan(dst_rank);
  if (from.nics.empty() || to.nics.empty()) return nullptr;
  const std::size_t i = from.index_for(channel), j = to.index_for(channel);
  if (i > 0xffff || j > 0xffff) throw Error("route: a host with more than 65536 NICs");
  const auto nics = static_cast<std::uint32_t>((i << 16) | j);
  if (const Path* cached = c.routes.find(src_rank, dst_rank, nics)) return cached;
  const auto legs_of = [](const NicPlan& plan, std::size_t k) -> NicPlan::Legs& {
    if (plan.legs.empty()) plan.legs.resize(plan.nics.size());
    return plan.legs[k];
  };
  NicPlan::Legs& out_legs = legs_of(from, i);
  NicPlan::Legs& in_legs = legs_of(to, j);
  if (out_legs.to_nic == nullptr) out_legs.to_nic = &leg(s, from.nics[i]);
  if (in_legs.from_nic == nullptr) in_legs.from_nic = &leg(to.nics[j], d);
  const std::optional<Path>& out = *out_legs.to_nic;
  const std::optional<Path>& in = *in_legs.from_nic;
  std::optional<Path> joined;
  if (out && in) {
    std::vector<std::size_t> links;
    links.reserve(out->links.size() + in->links.size() + 8);  // a leg across a fat-tree: 4 links
    links.insert(links.end(), out->links.begin(), out->links.end());
    if (append_network_leg(from.nics[i], to.nics[j], links)) {
      links.insert(links.end(), in->links.begin(), in->links.end());
      joined = path_over(*this, std::move(links));
    }
  }
  Path path = joined ? std::move(*joined) : direct_route(src_rank, dst_rank);
  return &c.routes.insert(src_rank, dst_rank, nics, std::move(path), num_ranks());
}

std::vector<VertexId> Topology::local_nics(int rank) const {
  check_rank(rank, "local_nics:");
  std::lock_guard lock(cache().mutex);
  return nic_plan(rank).nics;
}

VertexId Topology::nic_for_channel(int rank, int channel) const {
  check_rank(rank, "nic_for_channel:");
  if (channel < 0) throw Error("nic_for_channel: channel " + std::to_string(channel) + " must be >= 0");
  std::lock_guard lock(cache().mutex);
  const NicPlan& plan = nic_plan(rank);
  return plan.nics.empty() ? Graph::null_vertex() : plan.nics[plan.index_for(channel)];
}

}  // namespace colltune::topo
