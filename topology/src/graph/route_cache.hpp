#pragma once
// Internal: the per-topology route cache behind Topology::route(), and the reusable search
// state that keeps one route query from paying O(devices) to initialise its arrays.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "colltune/topology/graph.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::topo {

// Route distance: (latency in integer picoseconds, hop count, sum of link indices), compared
// lexicographically. Equal latency sums compare exactly equal, the hop count breaks the tie,
// and the index sum nearly always makes the remaining choice unique. Where it does not (equal
// index sums, e.g. on a torus), route() still picks what Dijkstra's order picks (routing.cpp),
// so every search (route()'s bidirectional one, routes_from(), device_route()) agrees.
struct Cost {
  std::int64_t ps = 0;
  std::int64_t hops = 0;
  std::int64_t tie = 0;
};
inline constexpr std::int64_t kInfPs = std::numeric_limits<std::int64_t>::max();
inline constexpr Cost kCostInf{kInfPs, kInfPs, kInfPs};
struct CostLess {
  bool operator()(const Cost& a, const Cost& b) const {
    if (a.ps != b.ps) return a.ps < b.ps;
    if (a.hops != b.hops) return a.hops < b.hops;
    return a.tie < b.tie;
  }
};
struct CostPlus {
  Cost operator()(const Cost& a, const Cost& b) const { return {a.ps + b.ps, a.hops + b.hops, a.tie + b.tie}; }
};

// A link's latency in picoseconds; throws colltune::Error for a negative or non-finite one.
std::int64_t latency_ps(const Link& link);

// The state of route()'s search (routing.cpp): a forward and a backward half, kept at rest
// between queries (dist = infinity, heap_pos = kNotQueued, cross_first = kNone) so that a query
// pays only for the vertices it reaches. A vertex is "settled" by a half when its dist there is
// finite and it is no longer queued there.
struct BidirectionalScratch {
  static constexpr std::size_t kNotQueued = static_cast<std::size_t>(-1);  // d_ary_heap's "absent"
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Half {
    std::vector<Cost> dist;             // forward: from the source; backward: to the destination
    std::vector<EdgeId> tree_edge;      // forward: the edge into v; backward: the edge out of v
    std::vector<std::size_t> heap_pos;  // position in this half's heap, kNotQueued when absent
  };
  Half forward, backward;
  std::vector<VertexId> touched;           // vertices whose state a query changed
  std::vector<VertexId> backward_settled;  // in settling order
  // The in-edges of the backward-settled vertices, listed per source vertex: cross_first[x]
  // indexes `cross`, whose entries chain through `next`.
  struct CrossEdge {
    EdgeId edge;
    std::size_t next;
  };
  std::vector<std::size_t> cross_first;
  std::vector<CrossEdge> cross;

  void ensure(std::size_t vertices) {
    if (forward.dist.size() == vertices) return;
    for (Half* h : {&forward, &backward}) {
      h->dist.assign(vertices, kCostInf);
      h->tree_edge.assign(vertices, EdgeId{});
      h->heap_pos.assign(vertices, kNotQueued);
    }
    cross_first.assign(vertices, kNone);
    touched.clear();
    backward_settled.clear();
    cross.clear();
  }
  // Records v the first time either half reaches it (call before writing its dist).
  void touch(VertexId v) {
    if (forward.dist[v].ps == kInfPs && backward.dist[v].ps == kInfPs) touched.push_back(v);
  }
  void reset() {
    for (VertexId v : touched) {
      for (Half* h : {&forward, &backward}) {
        h->dist[v] = kCostInf;
        h->heap_pos[v] = kNotQueued;
      }
      cross_first[v] = kNone;
    }
    touched.clear();
    backward_settled.clear();
    cross.clear();
  }
};

// Where one route search may go. route() between hosts with NICs joins three legs (NCCL's NIC
// per channel, nic_routing.cpp): GPU to NIC inside the host, NIC to NIC across the network, NIC
// to GPU inside the other host; each leg's search keeps to its region, so that a route never
// passes through a host it does not start or end in.
struct Region {
  enum class Kind { everywhere, host, network };
  Kind kind = Kind::everywhere;
  int host = -1;                // host: the host whose devices the leg may use
  VertexId from = 0, to = 0;    // network: the two NICs, the only devices of a host it may use
  bool allows(const Graph& g, VertexId v) const {
    switch (kind) {
      case Kind::everywhere: return true;
      case Kind::host: return g[v].host == host;
      case Kind::network: return g[v].host < 0 || v == from || v == to;
    }
    return false;
  }
};

// A rank's NICs by NCCL's rule (nic_routing.cpp): its local NICs in device order, the one
// channel 0 uses and how many channels step through before they wrap. Empty: no NIC route.
struct NicPlan {
  std::vector<VertexId> nics;
  int start = 0;     // NCCL: gpu.dev % localGpuCount, bit-mirrored when nics.size() is a power of 2
  int per_gpu = 1;   // NCCL: netsPerGpu = ceil(nics.size() / localGpuCount)
  // The rank's legs to and from each of `nics` (Topology::leg: entries of the shared legs'
  // map, which outlive the plan), each looked up on the first route that takes it; a route then
  // reads its two legs without the legs' lock and hash map. Filled under the route cache's lock.
  struct Legs {
    const std::optional<Path>* to_nic = nullptr;
    const std::optional<Path>* from_nic = nullptr;
  };
  mutable std::vector<Legs> legs;
  // Index into `nics` of channel `channel`'s NIC (nics not empty, channel >= 0).
  std::size_t index_for(int channel) const { return static_cast<std::size_t>(start + channel % per_gpu) % nics.size(); }
};

// What route() needs of every rank and host, built on its first query: each rank's host (a
// dense array: most routes stay inside one host and need nothing else), each host's devices in
// device order with each device's index there, and each host's ranks in rank order.
struct HostIndex {
  std::vector<int> rank_host;                  // by rank; -1: outside every host
  std::vector<std::vector<VertexId>> devices;  // by host
  std::vector<std::uint32_t> local;            // by device: its index in devices[its host]
  std::vector<std::vector<int>> ranks;         // by host
};

// One host's side of NCCL's rule (nic_routing.cpp), made when one of its ranks first needs a NIC.
struct HostNics {
  std::vector<VertexId> nics;                     // its NICs with a network port, in device order
  std::vector<VertexId> gpus;                     // the devices its ranks run on, in rank order
  std::vector<std::pair<VertexId, int>> sharing;  // a first local NIC -> GPUs nearest to it (made on need)
};

// The cached routes: per source rank, its routes sorted by (destination, NIC pair), each
// pointing into a deque that keeps the Paths where they were first stored (references handed
// out stay valid while the topology lives and is not modified). A ring's lookups walk the
// sources in order and find each Path next to the previous one.
class RouteTable {
 public:
  static constexpr std::uint32_t kDirect = 0xffffffffu;  // no NICs: one minimum-latency search
  // nics: (source NIC index << 16) | destination NIC index, or kDirect.
  const Path* find(int src, int dst, std::uint32_t nics) const {
    const auto s = static_cast<std::size_t>(src);
    if (s >= by_source_.size()) return nullptr;
    const std::vector<Entry>& routes = by_source_[s];
    const std::uint64_t key = key_of(dst, nics);
    auto it = std::lower_bound(routes.begin(), routes.end(), key, [](const Entry& e, std::uint64_t k) { return e.key < k; });
    return it != routes.end() && it->key == key ? it->path : nullptr;
  }
  const Path& insert(int src, int dst, std::uint32_t nics, Path path, int num_ranks) {
    if (by_source_.empty()) by_source_.resize(static_cast<std::size_t>(num_ranks));
    std::vector<Entry>& routes = by_source_[static_cast<std::size_t>(src)];
    const std::uint64_t key = key_of(dst, nics);
    auto it = std::lower_bound(routes.begin(), routes.end(), key, [](const Entry& e, std::uint64_t k) { return e.key < k; });
    paths_.push_back(std::move(path));
    routes.insert(it, Entry{key, &paths_.back()});
    return paths_.back();
  }
  void clear() {
    by_source_.clear();
    paths_.clear();
  }

 private:
  struct Entry {
    std::uint64_t key = 0;
    const Path* path = nullptr;
  };
  static std::uint64_t key_of(int dst, std::uint32_t nics) { return (static_cast<std::uint64_t>(dst) << 32) | nics; }
  std::vector<std::vector<Entry>> by_source_;
  std::deque<Path> paths_;
};

struct Topology::RouteCache {
  std::mutex mutex;
  RouteTable routes;
  std::optional<HostIndex> index;                // built on the first query
  std::vector<std::optional<HostNics>> hosts;    // by host, made on need
  std::vector<std::optional<NicPlan>> plans;     // by rank, made on need
  BidirectionalScratch scratch;                // route()'s search state, used under `mutex`
};

// Legs of NIC routes, by device_pair_key of their devices: GPU -> NIC and NIC -> GPU inside
// a host, NIC -> NIC across the network; nullopt where the leg has no path in its region.
// Shared by the copies of a topology (Topology::legs_), so read and written under its own
// mutex; no entry is erased while it is shared (Topology::invalidate_routes gives the changed
// copy a fresh cache), so a reference to one stays valid. A path's bottleneck_gbps is that of the
// copy that found it: routes are built from the paths' links (joined_path), which read each
// link at the reading copy's bandwidth.
struct Topology::LegCache {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, std::optional<Path>> legs;
  // The network legs' middles: the links between the switch a NIC's one network link leads to
  // and the switch the other NIC's one network link comes from (Topology::append_network_leg),
  // by the same key of the two switches; nullopt where there is no path.
  std::unordered_map<std::uint64_t, std::optional<std::vector<std::size_t>>> between_switches;
  // The minimum-latency paths over the whole graph (direct_route()), by the same key; read the
  // same way as the legs.
  std::unordered_map<std::uint64_t, std::optional<Path>> direct;
};

// The key of a pair of devices in the LegCache's maps: (from << 32) | to.
inline std::uint64_t device_pair_key(VertexId from, VertexId to) {
  return (static_cast<std::uint64_t>(from) << 32) | static_cast<std::uint64_t>(to);
}

// The entry of `key` in one of the LegCache's maps, searched (`search()`, outside the lock) and
// kept where there is none yet. Another copy may search the same key meanwhile: the same path,
// the first one kept. Entries are never erased while the cache is shared, so the reference
// stays valid.
template <class Map, class Search>
const typename Map::mapped_type& shared_search(std::mutex& mutex, Map& map, std::uint64_t key, Search search) {
  {
    std::lock_guard lock(mutex);
    if (auto it = map.find(key); it != map.end()) return it->second;
  }
  typename Map::mapped_type found = search();
  std::lock_guard lock(mutex);
  return map.emplace(key, std::move(found)).first->second;
}

// nic_routing.cpp: the index in `slot`, built there on first use.
const HostIndex& host_index(const Topology& t, std::optional<HostIndex>& slot);

// routing.cpp: route()'s search (the bidirectional one) restricted to `region`, the links
// from the destination back to the source or nullopt when there is no path; and the Path of
// such a list of links, its bandwidths as `t` reads them (Topology::bandwidth_of).
std::optional<std::vector<EdgeId>> cheapest_route(const Graph& g, VertexId src, VertexId dst, const Region& region,
                                                  BidirectionalScratch& s);
Path path_of(const Topology& t, const std::vector<EdgeId>& backwards);
// The Path of these links, in order: the same figures path_of() gives for them.
Path path_over(const Topology& t, std::vector<std::size_t> links);
// The Path of legs joined end to end: path_over() of their links.
Path joined_path(const Topology& t, std::initializer_list<const Path*> legs);

}  // namespace colltune::topo
