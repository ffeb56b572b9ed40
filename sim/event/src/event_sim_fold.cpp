// Rotation symmetry of the machine, checked from the routes (see event_sim_fold.hpp).
#include "event_sim_fold.hpp"

#include "event_sim_engine.hpp"

namespace colltune::sim::detail {

Fold::Fold(const topo::Topology& topology, int nranks, int period)
    : topology_(topology), nranks_(nranks), period_(period), copies_(nranks / period) {
  if (copies_ > 1) {
    next_.assign(topology.num_links(), kNone);
    prev_.assign(topology.num_links(), kNone);
  }
  class_of_.assign(topology.num_links(), kNone);
}

int Fold::shift(int rank, int k) const {
  const long long r = (static_cast<long long>(rank) + static_cast<long long>(k) * period_) % nranks_;
  return static_cast<int>(r);
}

bool Fold::same_shape(const topo::Path& a, const topo::Path& b) const {
  return a.links.size() == b.links.size() && a.bottleneck_gbps == b.bottleneck_gbps && a.latency_us == b.latency_us;
}

// Hop `hop` of copy k must map to hop `hop` of copy k+1 under one permutation of the links.
bool Fold::link_rotation(const std::vector<const topo::Path*>& copies, std::size_t hop) {
  const std::size_t n = copies.size();
  for (std::size_t k = 0; k < n; ++k) {
    const auto from = static_cast<std::uint32_t>(copies[k]->links[hop]);
    const auto to = static_cast<std::uint32_t>(copies[(k + 1) % n]->links[hop]);
    if (next_[from] == kNone && prev_[to] == kNone) {
      next_[from] = to;
      prev_[to] = from;
    } else if (next_[from] != to || prev_[to] != from) {
      return false;
    }
  }
  return true;
}

// The class (link orbit) of hop `hop`, created on first sight. The orbit is the cycle of the
// rotation through copy 0's link; its length divides the number of copies.
std::uint32_t Fold::classify(const std::vector<const topo::Path*>& copies, std::size_t hop) {
  const auto first = static_cast<std::uint32_t>(copies[0]->links[hop]);
  if (class_of_[first] != kNone) return class_of_[first];
  const auto cls = static_cast<std::uint32_t>(class_size_.size());
  int size = 0;
  for (const topo::Path* copy : copies) {
    const auto l = static_cast<std::uint32_t>(copy->links[hop]);
    if (size > 0 && l == first) break;  // the orbit closed early: a shorter cycle
    class_of_[l] = cls;
    ++size;
  }
  class_size_.push_back(size);
  return cls;
}

std::optional<FoldedRoute> Fold::add_channel(int src, int dst, std::uint16_t op_channel) {
  std::vector<const topo::Path*> copies;
  copies.reserve(static_cast<std::size_t>(copies_));
  for (int k = 0; k < copies_; ++k) {
    copies.push_back(&topology_.route(shift(src, k), shift(dst, k), op_channel));
    if (!same_shape(*copies.front(), *copies.back())) return std::nullopt;
  }
  const topo::Path& path = *copies.front();
  FoldedRoute route;
  route.rate = std::max(path.bottleneck_gbps * 1e3, 1e-9);  // the engine's rate for a flow alone on its links
  route.latency_us = path.latency_us;
  for (std::size_t hop = 0; hop < path.links.size(); ++hop) {
    if (copies_ > 1 && !link_rotation(copies, hop)) return std::nullopt;
    for (const topo::Path* copy : copies)
      if (topology_.link(copy->links[hop]).bandwidth_gbps != topology_.link(path.links[hop]).bandwidth_gbps)
        route.uniform_links = false;
    route.classes.push_back(classify(copies, hop));
  }
  return route;
}

std::vector<int> fold_periods(int nranks, int declared) {
  std::vector<int> periods;
  if (declared > 0) {
    for (int d = declared; d < nranks; d += declared)
      if (nranks % d == 0) periods.push_back(d);
  }
  periods.push_back(nranks);
  return periods;
}

bool ranks_rotate(const coll::StepSource& source, const topo::Topology& topology, int period) {
  for (int r = period; r < source.header().nranks; ++r) {
    const int rep = r % period;
    if (source.num_steps(r) != source.num_steps(rep) || rank_gamma(topology, r) != rank_gamma(topology, rep))
      return false;
  }
  return true;
}

bool ranks_share_a_reducing_device(const topo::Topology& topology, int nranks) {
  std::vector<bool> taken(topology.num_devices(), false);
  for (int r = 0; r < nranks; ++r) {
    if (rank_gamma(topology, r) == 0) continue;
    const std::size_t device = topology.device_of_rank(r);
    if (taken[device]) return true;
    taken[device] = true;
  }
  return false;
}

}  // namespace colltune::sim::detail
