// Topology construction and inspection. Routing lives in routing.cpp, validate() in validate.cpp.
#include "colltune/topology/topology.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "graph/route_cache.hpp"

namespace colltune::topo {

Topology::Topology() : graph_(std::make_unique<Graph>()), cache_(std::make_unique<RouteCache>()) {}

// Edge descriptors point at edge properties inside the graph they came from, so after copying
// the graph the link index -> edge table is rebuilt from each edge's stored index. A move takes
// the graph itself (graph_ is a pointer): the table stays valid; the moved-from Topology is
// left empty.
Topology::Topology(const Topology& other)
    : name(other.name),
      description(other.description),
      calibration(other.calibration),
      gpu(other.gpu),
      transport(other.transport),
      graph_(std::make_unique<Graph>(*other.graph_)),
      hosts_(other.hosts_),
      rank_device_(other.rank_device_),
      rank_map_count_(other.rank_map_count_),
      cache_(std::make_unique<RouteCache>()) {
  rebuild_link_table();
}

Topology::Topology(Topology&& other) noexcept : Topology() { *this = std::move(other); }

Topology& Topology::operator=(Topology&& other) noexcept {
  if (this != &other) {
    name = std::move(other.name);
    description = std::move(other.description);
    calibration = std::move(other.calibration);
    gpu = std::move(other.gpu);
    transport = other.transport;
    std::swap(graph_, other.graph_);
    hosts_ = std::move(other.hosts_);
    rank_device_ = std::move(other.rank_device_);
    rank_map_count_ = std::move(other.rank_map_count_);
    std::swap(links_, other.links_);
    std::swap(cache_, other.cache_);
    other.clear_after_move();
  }
  return *this;
}

// The moved-from object: an empty machine with an empty cache (it may still be assigned to or
// destroyed, as any moved-from value).
void Topology::clear_after_move() noexcept {
  graph_->clear();
  links_.clear();
  hosts_.clear();
  rank_device_.clear();
  rank_map_count_.clear();
  invalidate_routes();
}

void Topology::rebuild_link_table() {
  links_.assign(boost::num_edges(*graph_), EdgeId{});
  for (auto [it, end] = boost::edges(*graph_); it != end; ++it) links_[(*graph_)[*it].index] = *it;
}

Topology& Topology::operator=(const Topology& other) {
  if (this != &other) {
    Topology copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Topology::~Topology() = default;


void Topology::invalidate_routes() {
  std::lock_guard lock(cache_->mutex);
  cache_->routes.clear();
  cache_->legs.clear();
  cache_->index.reset();
  cache_->hosts.clear();
  cache_->plans.clear();
}

int Topology::add_host(std::string host_name) {
  hosts_.push_back(std::move(host_name));
  return num_hosts() - 1;
}

// The size limits (limits.hpp) are enforced here, where every builder and reader adds its
// devices, links and ranks: no input can grow a topology past them.
VertexId Topology::add_device(Device device) {
  if (num_devices() >= limits::kMaxTopologyDevices)
    limits::exceeded("topology: more than " + std::to_string(limits::kMaxTopologyDevices) + " devices",
                     std::to_string(limits::kMaxTopologyDevices) + " devices", limits::kTopologySizeReason);
  invalidate_routes();
  return boost::add_vertex(std::move(device), *graph_);
}

std::size_t Topology::add_link(VertexId from, VertexId to, LinkKind kind, double gbps, double latency_us) {
  const std::size_t n = num_devices();
  if (from >= n || to >= n)
    throw Error("add_link: device index " + std::to_string(std::max(from, to)) + " does not exist (" +
                std::to_string(n) + " devices)");
  if (links_.size() >= limits::kMaxTopologyLinks)
    limits::exceeded("topology: more than " + std::to_string(limits::kMaxTopologyLinks) + " links",
                     std::to_string(limits::kMaxTopologyLinks) + " directed links", limits::kTopologySizeReason);
  invalidate_routes();
  const std::size_t index = links_.size();
  auto [edge, added] = boost::add_edge(from, to, Link{kind, gbps, latency_us, index}, *graph_);
  (void)added;  // a multigraph: always added
  links_.push_back(edge);
  return index;
}

void Topology::add_duplex_link(VertexId a, VertexId b, LinkKind kind, double gbps, double latency_us) {
  add_link(a, b, kind, gbps, latency_us);
  add_link(b, a, kind, gbps, latency_us);
}

// Recorded, not checked: validate() reports ranks mapped twice or not at all, and devices that
// do not exist, so that a file's mistakes surface as one clear message.
void Topology::map_rank(int rank, VertexId device) {
  if (rank < 0) throw Error("map_rank: rank must be >= 0, got " + std::to_string(rank));
  if (rank >= limits::kMaxTopologyRanks)
    limits::exceeded("topology: rank " + std::to_string(rank), std::to_string(limits::kMaxTopologyRanks) + " ranks",
                     limits::kTopologySizeReason);
  invalidate_routes();
  const auto r = static_cast<std::size_t>(rank);
  if (r >= rank_device_.size()) {
    rank_device_.resize(r + 1, Graph::null_vertex());
    rank_map_count_.resize(r + 1, 0);
  }
  if (rank_map_count_[r]++ == 0) rank_device_[r] = device;
}

std::size_t Topology::num_links() const { return links_.size(); }

const Link& Topology::link(std::size_t index) const { return (*graph_)[links_.at(index)]; }
VertexId Topology::link_source(std::size_t index) const { return boost::source(links_.at(index), *graph_); }
VertexId Topology::link_target(std::size_t index) const { return boost::target(links_.at(index), *graph_); }

std::optional<VertexId> Topology::find_device(std::string_view id) const {
  for (VertexId v = 0; v < num_devices(); ++v)
    if ((*graph_)[v].id == id) return v;
  return std::nullopt;
}

void Topology::check_rank(int rank, const char* what) const {
  if (rank < 0 || rank >= num_ranks())
    throw Error(std::string(what) + " rank " + std::to_string(rank) + " out of range (topology has " +
                std::to_string(num_ranks()) + " ranks)");
  const VertexId v = rank_device_[static_cast<std::size_t>(rank)];
  if (v == Graph::null_vertex() || v >= num_devices())
    throw Error(std::string(what) + " rank " + std::to_string(rank) + " is not mapped to an existing device");
}

VertexId Topology::device_of_rank(int rank) const {
  check_rank(rank, "device_of_rank:");
  return rank_device_[static_cast<std::size_t>(rank)];
}

int Topology::host_of_rank(int rank) const { return (*graph_)[device_of_rank(rank)].host; }

// Hosts that hold ranks, renumbered densely in host order; a rank on a device outside every
// host (unusual: a rank on a switch) is a host of its own, after the real ones.
RankLayout Topology::rank_layout() const {
  std::map<long, int> dense;  // original host key -> dense host index
  std::vector<long> keys(static_cast<std::size_t>(num_ranks()));
  for (int r = 0; r < num_ranks(); ++r) {
    const int h = host_of_rank(r);
    keys[static_cast<std::size_t>(r)] = h >= 0 ? h : static_cast<long>(num_hosts()) + r;
    dense.emplace(keys[static_cast<std::size_t>(r)], 0);
  }
  int next = 0;
  for (auto& [key, index] : dense) index = next++;
  std::vector<int> host_of(keys.size());
  for (std::size_t r = 0; r < keys.size(); ++r) host_of[r] = dense.at(keys[r]);
  return RankLayout(std::move(host_of));
}

void Topology::set_link_figures(std::size_t index, double gbps, double latency_us) {
  if (index >= links_.size()) throw Error("link index " + std::to_string(index) + " out of range");
  Link& l = (*graph_)[links_[index]];
  l.bandwidth_gbps = gbps;
  l.latency_us = latency_us;
  invalidate_routes();
}

void Topology::set_reduce_gbps(VertexId device, double gbps) {
  if (device >= boost::num_vertices(*graph_)) throw Error("device " + std::to_string(device) + " out of range");
  (*graph_)[device].reduce_gbps = gbps;
}

Topology Topology::with_scaled_bandwidth(LinkKind kind, double factor) const {
  if (!(factor > 0) || !std::isfinite(factor))
    throw Error("bandwidth scale factor must be positive and finite, got " + std::to_string(factor));
  Topology copy(*this);
  for (const EdgeId& e : copy.links_)
    if ((*copy.graph_)[e].kind == kind) (*copy.graph_)[e].bandwidth_gbps *= factor;
  return copy;
}

}  // namespace colltune::topo
