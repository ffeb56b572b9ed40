// Topology construction and inspection. Routing lives in routing.cpp, validate() in validate.cpp.
#include "colltune/topology/topology.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/topology/graph.hpp"
#include "graph/route_cache.hpp"

namespace colltune::topo {

Topology::Topology()
    : store_(std::make_shared<GraphStore>()),
      cache_(std::make_unique<RouteCache>()),
      legs_(std::make_shared<LegCache>()) {}

namespace {

// The factors a copy reads its graph with (Topology's bandwidth_scale_, latency_scale_,
// reduce_scale_), to be written into a store of its own.
struct Factors {
  const std::array<double, kLinkKinds>* bandwidth = nullptr;  // none: every factor 1
  double latency = 1.0;
  double reduce = 1.0;
};

// A store of its own: the graph copied, each link's bandwidth and latency and each device's
// reduction rate times its factor, the products a copy reads (Topology::link(),
// reduce_gbps_of()). Edge descriptors point at edge properties inside the graph they came from,
// so the link index -> edge table is rebuilt from each edge's stored index.
std::shared_ptr<GraphStore> copy_store(const GraphStore& from, const Factors& factors) {
  auto store = std::make_shared<GraphStore>();
  // Assigned in place: boost::adjacency_list has no move constructor, so a GraphStore built
  // from a temporary copied the whole graph twice.
  store->graph = from.graph;
  store->links.assign(boost::num_edges(store->graph), EdgeId{});
  store->by_index.assign(boost::num_edges(store->graph), Link{});
  for (auto [it, end] = boost::edges(store->graph); it != end; ++it) {
    Link& link = store->graph[*it];
    store->links[link.index] = *it;
    if (factors.bandwidth) link.bandwidth_gbps *= (*factors.bandwidth)[static_cast<std::size_t>(link.kind)];
    if (factors.latency != 1.0) link.latency_us *= factors.latency;
    store->by_index[link.index] = link;
  }
  if (factors.reduce != 1.0)
    for (VertexId v = 0; v < boost::num_vertices(store->graph); ++v) store->graph[v].reduce_gbps *= factors.reduce;
  return store;
}

// Whether every link's cost in picoseconds (latency_ps) times `factor` is exactly its cost with
// its latency times `factor`: then every route search compares costs as it did, scaled by one
// positive number, and finds the same paths.
bool costs_scale_exactly(const Graph& g, double factor) {
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const double us = g[*it].latency_us;
    const double scaled = us * factor;
    if (!(us >= 0 && us < 1e9) || !(scaled >= 0 && scaled < 1e9)) return false;  // latency_ps would refuse it
    const auto ps = static_cast<double>(std::llround(us * 1e6));
    const auto scaled_ps = static_cast<double>(std::llround(scaled * 1e6));
    if (ps * factor != scaled_ps || std::fma(ps, factor, -scaled_ps) != 0) return false;  // the product exact
  }
  return true;
}

}  // namespace

// A copy shares the graph (never changed while shared: own_store()) and the paths its route
// searches found so far (LegCache), and has a route cache of its own. A move hands the store over whole
// and leaves the source an empty machine.
Topology::Topology(const Topology& other)
    : name(other.name),
      description(other.description),
      calibration(other.calibration),
      gpu(other.gpu),
      transport(other.transport),
      store_(other.store_),
      bandwidth_scale_(other.bandwidth_scale_),
      scaled_(other.scaled_),
      latency_scale_(other.latency_scale_),
      reduce_scale_(other.reduce_scale_),
      hosts_(other.hosts_),
      rank_device_(other.rank_device_),
      rank_map_count_(other.rank_map_count_),
      cache_(std::make_unique<RouteCache>()),
      legs_(other.legs_) {}

Topology::Topology(Topology&& other) noexcept
    : name(std::move(other.name)),
      description(std::move(other.description)),
      calibration(std::move(other.calibration)),
      gpu(std::move(other.gpu)),
      transport(other.transport),
      store_(std::exchange(other.store_, std::make_shared<GraphStore>())),
      bandwidth_scale_(std::exchange(other.bandwidth_scale_, {1.0, 1.0, 1.0, 1.0, 1.0})),
      scaled_(std::exchange(other.scaled_, false)),
      latency_scale_(std::exchange(other.latency_scale_, 1.0)),
      reduce_scale_(std::exchange(other.reduce_scale_, 1.0)),
      hosts_(std::move(other.hosts_)),
      rank_device_(std::move(other.rank_device_)),
      rank_map_count_(std::move(other.rank_map_count_)),
      cache_(std::make_unique<RouteCache>()),
      legs_(std::exchange(other.legs_, std::make_shared<LegCache>())) {}

Topology& Topology::operator=(Topology&& other) noexcept {
  if (this != &other) {
    name = std::move(other.name);
    description = std::move(other.description);
    calibration = std::move(other.calibration);
    gpu = std::move(other.gpu);
    transport = other.transport;
    store_ = std::exchange(other.store_, std::make_shared<GraphStore>());
    bandwidth_scale_ = std::exchange(other.bandwidth_scale_, {1.0, 1.0, 1.0, 1.0, 1.0});
    scaled_ = std::exchange(other.scaled_, false);
    latency_scale_ = std::exchange(other.latency_scale_, 1.0);
    reduce_scale_ = std::exchange(other.reduce_scale_, 1.0);
    hosts_ = std::move(other.hosts_);
    rank_device_ = std::move(other.rank_device_);
    rank_map_count_ = std::move(other.rank_map_count_);
    cache_ = std::make_unique<RouteCache>();
    legs_ = std::exchange(other.legs_, std::make_shared<LegCache>());
  }
  return *this;
}

GraphStore& Topology::own_store() {
  const bool factors = scaled_ || latency_scale_ != 1.0 || reduce_scale_ != 1.0;
  if (factors || store_.use_count() > 1) {
    store_ = copy_store(*store_, Factors{scaled_ ? &bandwidth_scale_ : nullptr, latency_scale_, reduce_scale_});
    bandwidth_scale_.fill(1.0);
    scaled_ = false;
    latency_scale_ = 1.0;
    reduce_scale_ = 1.0;
  }
  const std::lock_guard lock(store_->checked_mutex);
  store_->checked.clear();  // about to change: validate() reads it again
  return *store_;
}

Topology& Topology::operator=(const Topology& other) {
  if (this != &other) {
    Topology copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Topology::~Topology() = default;

void Topology::clear_rank_routes() {
  cache_->routes.clear();
  cache_->index.reset();
  cache_->hosts.clear();
  cache_->plans.clear();
}

// Both called for every device, link and rank a builder adds (168,000 links on a 16,384-GPU
// fat-tree): one lock each.
void Topology::invalidate_routes() {
  std::lock_guard lock(cache_->mutex);
  clear_rank_routes();
  if (legs_.use_count() > 1) {
    legs_ = std::make_shared<LegCache>();  // the copies that share the old legs keep them
  } else {
    legs_->legs.clear();
    legs_->direct.clear();
    legs_->between_switches.clear();
  }
}

void Topology::forget_rank_routes() {
  std::lock_guard lock(cache_->mutex);
  clear_rank_routes();
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
  return boost::add_vertex(std::move(device), own_store().graph);
}

std::size_t Topology::add_link(VertexId from, VertexId to, LinkKind kind, double gbps, double latency_us) {
  const std::size_t n = num_devices();
  if (from >= n || to >= n)
    throw Error("add_link: device index " + std::to_string(std::max(from, to)) + " does not exist (" +
                std::to_string(n) + " devices)");
  if (store_->links.size() >= limits::kMaxTopologyLinks)
    limits::exceeded("topology: more than " + std::to_string(limits::kMaxTopologyLinks) + " links",
                     std::to_string(limits::kMaxTopologyLinks) + " directed links", limits::kTopologySizeReason);
  invalidate_routes();
  GraphStore& store = own_store();
  const std::size_t index = store.links.size();
  const Link link{kind, gbps, latency_us, index};
  auto [edge, added] = boost::add_edge(from, to, link, store.graph);
  (void)added;  // a multigraph: always added
  store.links.push_back(edge);
  store.by_index.push_back(link);
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
  // The paths between devices stay (legs_: with_nvls_switch's copies reuse what their machine
  // found); what a rank's routes are built from (its NICs, its host's GPUs) may not.
  forget_rank_routes();
  const auto r = static_cast<std::size_t>(rank);
  if (r >= rank_device_.size()) {
    rank_device_.resize(r + 1, kNoDevice);
    rank_map_count_.resize(r + 1, 0);
  }
  if (rank_map_count_[r]++ == 0) rank_device_[r] = device;
}

std::size_t Topology::num_devices() const { return boost::num_vertices(store_->graph); }
std::size_t Topology::num_links() const { return store_->links.size(); }
const Device& Topology::device(VertexId v) const { return store_->graph[v]; }

std::vector<std::size_t> Topology::out_links(VertexId v) const {
  std::vector<std::size_t> out;
  for (auto [it, end] = boost::out_edges(v, store_->graph); it != end; ++it) out.push_back(store_->graph[*it].index);
  return out;
}

std::vector<std::size_t> Topology::in_links(VertexId v) const {
  std::vector<std::size_t> in;
  for (auto [it, end] = boost::in_edges(v, store_->graph); it != end; ++it) in.push_back(store_->graph[*it].index);
  return in;
}

Link Topology::link(std::size_t index) const {
  Link l = store_->by_index.at(index);
  l.bandwidth_gbps = bandwidth_of(l);
  l.latency_us = latency_of(l);
  return l;
}

double Topology::bandwidth_of(const Link& link) const {
  return scaled_ ? link.bandwidth_gbps * bandwidth_scale_[static_cast<std::size_t>(link.kind)] : link.bandwidth_gbps;
}

double Topology::latency_of(const Link& link) const {
  return latency_scale_ != 1.0 ? link.latency_us * latency_scale_ : link.latency_us;
}

double Topology::reduce_gbps_of(VertexId v) const {
  const double gbps = store_->graph[v].reduce_gbps;
  return reduce_scale_ != 1.0 ? gbps * reduce_scale_ : gbps;
}
VertexId Topology::link_source(std::size_t index) const { return boost::source(store_->links.at(index), store_->graph); }
VertexId Topology::link_target(std::size_t index) const { return boost::target(store_->links.at(index), store_->graph); }

std::optional<VertexId> Topology::find_device(std::string_view id) const {
  for (VertexId v = 0; v < num_devices(); ++v)
    if (store_->graph[v].id == id) return v;
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

int Topology::host_of_rank(int rank) const { return store_->graph[device_of_rank(rank)].host; }

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
  if (index >= store_->links.size()) throw Error("link index " + std::to_string(index) + " out of range");
  GraphStore& store = own_store();
  Link& l = store.graph[store.links[index]];
  l.bandwidth_gbps = gbps;
  l.latency_us = latency_us;
  store.by_index[index] = l;
  invalidate_routes();
}

void Topology::set_reduce_gbps(VertexId device, double gbps) {
  if (device >= boost::num_vertices(store_->graph)) throw Error("device " + std::to_string(device) + " out of range");
  own_store().graph[device].reduce_gbps = gbps;
}

namespace {

void check_scale_factor(double factor, const char* what = "bandwidth") {
  if (!(factor > 0) || !std::isfinite(factor))
    throw Error(std::string(what) + " scale factor must be positive and finite, got " + std::to_string(factor));
}

}  // namespace

Topology Topology::with_scaled_bandwidth(LinkKind kind, double factor) const {
  return with_scaled_bandwidth(std::vector<LinkKind>{kind}, factor);
}

Topology Topology::with_scaled_bandwidth(const std::vector<LinkKind>& kinds, double factor) const {
  check_scale_factor(factor);
  std::array<double, kLinkKinds> factors;
  factors.fill(1.0);
  for (LinkKind kind : kinds) factors[static_cast<std::size_t>(kind)] = factor;
  return with_scaled_bandwidth(factors);
}

Topology Topology::with_scaled_bandwidth(const std::array<double, kLinkKinds>& factors) const {
  for (double factor : factors) check_scale_factor(factor);
  Topology copy(*this);  // the graph shared, a fresh route cache
  // A scaled machine scaled again is written out first, so that every bandwidth is the product
  // of the same two roundings as when each copy held its own graph.
  if (copy.scaled_) copy.own_store();
  copy.bandwidth_scale_ = factors;
  copy.scaled_ = std::any_of(factors.begin(), factors.end(), [](double f) { return f != 1.0; });
  return copy;
}

Topology Topology::with_scaled_latency(double factor) const {
  check_scale_factor(factor, "latency");
  Topology copy(*this);
  // Scaled again: written out first, so that every latency is the product of the same two
  // roundings as when each copy held its own graph.
  if (copy.latency_scale_ != 1.0) copy.own_store();
  if (costs_scale_exactly(copy.store_->graph, factor)) {
    copy.latency_scale_ = factor;  // the paths found so far stay the copy's (legs_ shared)
    return copy;
  }
  for (std::size_t l = 0; l < copy.num_links(); ++l) {
    const Link figures = copy.link(l);
    copy.set_link_figures(l, figures.bandwidth_gbps, figures.latency_us * factor);
  }
  return copy;
}

Topology Topology::with_scaled_reduction(double factor) const {
  check_scale_factor(factor, "reduction");
  Topology copy(*this);
  if (copy.reduce_scale_ != 1.0) copy.own_store();  // as with_scaled_latency
  copy.reduce_scale_ = factor;
  return copy;
}

}  // namespace colltune::topo
