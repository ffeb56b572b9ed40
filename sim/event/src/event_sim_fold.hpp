#pragma once
// Rotation symmetry for the contention-free sweep (event_sim_sweep.cpp).
//
// If the schedule is invariant under rotating ranks by d (StepSource::rotation_period) and the
// machine is too, ranks r and r + d (mod p) live identical lives: the same step start and end
// times, the same transfers shifted by d. The sweep then simulates only ranks 0..d-1 (the
// representatives) and stands each of their transfers for its p/d copies. The machine's side is
// checked here, channel by channel, from the routes themselves (nothing is assumed of the
// topology): the p/d copies of a channel (a + kd -> b + kd) must have routes with the same
// bottleneck, latency and length, and "hop i of copy k -> hop i of copy k+1" must be one
// consistent permutation of the links over all channels (a rotation of the link graph). Links
// then fall into orbits ("classes") that carry identical traffic; a class with fewer than p/d
// links carries each transfer several times at once, which is contention.
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "colltune/collectives/step_source.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim::detail {

struct FoldedRoute {
  double rate = 0;                     // bytes per us: the bottleneck
  double latency_us = 0;
  std::vector<std::uint32_t> classes;  // the link class of every hop, in order
  // Whether the copies' links at each hop have one bandwidth (the sweep needs only the
  // bottleneck; the folded event queue shares each class's bandwidth, so it needs this).
  bool uniform_links = true;
};

class Fold {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // Ranks 0..nranks-1 folded by `period` (which divides nranks; nranks itself = no folding).
  Fold(const topo::Topology& topology, int nranks, int period);
  int period() const { return period_; }
  int copies() const { return copies_; }
  int representative(int rank) const { return rank % period_; }
  // Rotates `rank` by k periods.
  int shift(int rank, int k) const;

  // The route of channel src -> dst (src a representative) on op channel `op_channel`
  // (Topology::route) if its copies are the rotation of it; nullopt when they are not (the
  // machine is not symmetric under this period).
  std::optional<FoldedRoute> add_channel(int src, int dst, std::uint16_t op_channel);

  std::size_t num_classes() const { return class_size_.size(); }
  // How many copies of one transfer each link of the class carries at once (1 = none shared).
  int multiplicity(std::uint32_t cls) const { return copies_ / class_size_[cls]; }
  // The class of topology link l, kNone if no route seen uses it.
  std::uint32_t class_of(std::size_t link) const { return class_of_[link]; }

 private:
  bool same_shape(const topo::Path& a, const topo::Path& b) const;
  bool link_rotation(const std::vector<const topo::Path*>& copies, std::size_t hop);
  std::uint32_t classify(const std::vector<const topo::Path*>& copies, std::size_t hop);

  const topo::Topology& topology_;
  int nranks_;
  int period_;
  int copies_;
  std::vector<std::uint32_t> next_;       // the rotation of each link (kNone = not seen yet)
  std::vector<std::uint32_t> prev_;       // its inverse
  std::vector<std::uint32_t> class_of_;   // link -> class
  std::vector<int> class_size_;           // distinct links in each class
};

// The periods worth trying for a source of `nranks` ranks declaring rotation period `declared`
// (0 = none): the divisors of nranks that are multiples of `declared`, smallest first, ending
// with nranks itself (no folding), which is the only one when nothing is declared.
std::vector<int> fold_periods(int nranks, int declared);

// Whether every rank r of the source looks like r mod period: as many steps, the same reduction
// rate (the rest of the symmetry is the source's rotation_period and the routes' Fold).
bool ranks_rotate(const coll::StepSource& source, const topo::Topology& topology, int period);

// Whether two of the first `nranks` ranks share a device with a reduction rate. Such ranks share
// its reduction queue in arrival order across them, which folding does not model.
bool ranks_share_a_reducing_device(const topo::Topology& topology, int nranks);

}  // namespace colltune::sim::detail
