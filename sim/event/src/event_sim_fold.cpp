// Symmetry of the machine under the schedule's group, checked from the routes (see
// event_sim_fold.hpp).
#include "event_sim_fold.hpp"

#include <algorithm>

#include "event_sim_engine.hpp"

namespace colltune::sim::detail {

Fold::Fold(const topo::Topology& topology, int nranks, Symmetry symmetry)
    : topology_(topology), nranks_(nranks), kind_(symmetry.kind), period_(symmetry.period),
      copies_(nranks / symmetry.period) {
  class_of_.assign(topology.num_links(), kNone);
  position_.assign(topology.num_links(), 0);
}

int Fold::shift(int rank, int k) const {
  if (kind_ == Symmetry::Kind::exclusive_or) return rank ^ (k * period_);
  const long long r = (static_cast<long long>(rank) + static_cast<long long>(k) * period_) % nranks_;
  return static_cast<int>(r);
}

int Fold::to_representative(int rank) const {
  const int k = rank / period_;
  if (kind_ == Symmetry::Kind::exclusive_or) return k;  // its own inverse
  return (copies_ - k) % copies_;
}

int Fold::compose(int k, int j) const {
  if (kind_ == Symmetry::Kind::exclusive_or) return k ^ j;
  return (k + j) % copies_;
}

bool Fold::same_shape(const topo::Path& a, const topo::Path& b) const {
  return a.links.size() == b.links.size() && a.bottleneck_gbps == b.bottleneck_gbps && a.latency_us == b.latency_us;
}

// A new orbit from the links the copies take at `hop`. The group acts on it only if the copies
// that share copy 0's link (its stabilizer H) leave the whole orbit in place (orbit[k h] =
// orbit[k]); then each of its links is taken by |H| copies.
std::uint32_t Fold::new_class(const std::vector<const topo::Path*>& copies, std::size_t hop) {
  const auto cls = static_cast<std::uint32_t>(class_size_.size());
  std::vector<std::uint32_t> orbit(copies.size());
  int distinct = 0;
  for (std::size_t k = 0; k < copies.size(); ++k) {
    const auto l = static_cast<std::uint32_t>(copies[k]->links[hop]);
    orbit[k] = l;
    if (class_of_[l] == cls) continue;
    if (class_of_[l] != kNone) return kNone;  // one link in two orbits: not an action
    class_of_[l] = cls;
    position_[l] = static_cast<std::uint32_t>(k);
    ++distinct;
  }
  std::vector<int> stabilizer;
  for (int k = 1; k < copies_; ++k)
    if (orbit[static_cast<std::size_t>(k)] == orbit[0]) stabilizer.push_back(k);
  for (int h : stabilizer)
    for (int k = 0; k < copies_; ++k)
      if (orbit[static_cast<std::size_t>(compose(k, h))] != orbit[static_cast<std::size_t>(k)]) return kNone;
  if (distinct * static_cast<int>(stabilizer.size() + 1) != copies_) return kNone;
  const double gbps = topology_.link(orbit[0]).bandwidth_gbps;
  class_uniform_.push_back(std::all_of(orbit.begin(), orbit.end(),
                                       [&](std::uint32_t l) { return topology_.link(l).bandwidth_gbps == gbps; }));
  orbit_.push_back(std::move(orbit));
  class_size_.push_back(distinct);
  return cls;
}

std::uint32_t Fold::classify(const std::vector<const topo::Path*>& copies, std::size_t hop) {
  const auto first = static_cast<std::uint32_t>(copies[0]->links[hop]);
  const std::uint32_t cls = class_of_[first];
  if (cls == kNone) return new_class(copies, hop);
  const std::vector<std::uint32_t>& orbit = orbit_[cls];
  const auto enter = static_cast<int>(position_[first]);
  for (int k = 0; k < copies_; ++k)
    if (static_cast<std::uint32_t>(copies[static_cast<std::size_t>(k)]->links[hop]) !=
        orbit[static_cast<std::size_t>(compose(enter, k))])
      return kNone;
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
    const std::uint32_t cls = classify(copies, hop);
    if (cls == kNone) return std::nullopt;
    // The copies' links at this hop are the class's orbit, all of it (classify): theirs is the
    // class's bandwidth, read once when it was made.
    if (!class_uniform_[cls]) route.uniform_links = false;
    route.classes.push_back(cls);
  }
  return route;
}

std::vector<Symmetry> fold_symmetries(const coll::StepSource& source) {
  const int nranks = source.header().nranks;
  std::vector<Symmetry> out;
  if (const int declared = source.rotation_period(); declared > 0) {
    for (int d = declared; d < nranks; d += declared)
      if (nranks % d == 0) out.push_back({Symmetry::Kind::rotation, d});
  }
  if (const int declared = source.xor_period(); declared > 0) {
    for (int d = declared; d < nranks; d *= 2)
      if (nranks % d == 0) out.push_back({Symmetry::Kind::exclusive_or, d});
  }
  out.push_back({Symmetry::Kind::rotation, nranks});
  return out;
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
