#pragma once
// Symmetry of a run, for the contention-free sweep (event_sim_sweep.cpp) and the folded event
// queue (event_queue_folded, event_sim_engine.hpp).
//
// If the schedule is invariant under a group of rank permutations acting on blocks of d ranks
// (StepSource::rotation_period: rotating ranks by d; StepSource::xor_period: XOR of ranks with a
// multiple of d) and the machine is too, ranks r and g(r) live identical lives for every element
// g of the group: the same step start and end times, the same transfers mapped by g. A folded run
// then simulates only ranks 0..d-1 (the representatives) and stands each of their transfers for
// its p/d copies. The machine's side is checked here, channel by channel, from the routes
// themselves (nothing is assumed of the topology): the p/d copies of a channel (g(a) -> g(b)) must
// have routes with the same bottleneck, latency and length, and "hop i of copy k -> hop i of copy
// g k" must be one consistent action of the group on the links over all channels. Links then fall
// into orbits ("classes") that carry identical traffic: an orbit is kept as the link each copy
// takes (the first channel to cross it fixes the order), and every later hop into it must take
// the orbit's links in that order shifted by where it enters. A class with fewer than p/d links
// carries each transfer several times at once (its multiplicity), which is contention.
#include <cstdint>
#include <optional>
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

// The group a run is folded by: rotations of the ranks by multiples of `period` (copy k maps r to
// r + k d mod p), or XOR of the ranks with multiples of `period` (copy k maps r to r xor k d; d
// and p powers of two).
struct Symmetry {
  enum class Kind : std::uint8_t { rotation, exclusive_or };
  Kind kind = Kind::rotation;
  int period = 0;
};

class Fold {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // Ranks 0..nranks-1 folded by `symmetry` (its period divides nranks; nranks itself = no folding).
  Fold(const topo::Topology& topology, int nranks, Symmetry symmetry);
  int period() const { return period_; }
  int copies() const { return copies_; }
  Symmetry symmetry() const { return {kind_, period_}; }
  int representative(int rank) const { return rank % period_; }
  // Copy k of `rank` (k in 0..copies-1); copy 0 is the rank itself.
  int shift(int rank, int k) const;
  // The copy that maps `rank` to its representative.
  int to_representative(int rank) const;

  // The route of channel src -> dst (src a representative) on op channel `op_channel`
  // (Topology::route) if its copies are its images under the group; nullopt when they are not
  // (the machine is not symmetric under this group).
  std::optional<FoldedRoute> add_channel(int src, int dst, std::uint16_t op_channel);

  std::size_t num_classes() const { return class_size_.size(); }
  // How many copies of one transfer each link of the class carries at once (1 = none shared).
  int multiplicity(std::uint32_t cls) const { return copies_ / class_size_[cls]; }
  // The class of topology link l, kNone if no route seen uses it.
  std::uint32_t class_of(std::size_t link) const { return class_of_[link]; }
  // The link copy k of the channel that first crossed the class takes in it.
  std::size_t orbit_link(std::uint32_t cls, int k) const { return orbit_[cls][static_cast<std::size_t>(k)]; }

 private:
  bool same_shape(const topo::Path& a, const topo::Path& b) const;
  // The class of hop `hop` of the copies, created on first sight; kNone when the copies do not
  // follow the group's action on it.
  std::uint32_t classify(const std::vector<const topo::Path*>& copies, std::size_t hop);
  std::uint32_t new_class(const std::vector<const topo::Path*>& copies, std::size_t hop);
  // Copy k moved by group element j: k + j for rotations, k xor j for XOR.
  int compose(int k, int j) const;

  const topo::Topology& topology_;
  int nranks_;
  Symmetry::Kind kind_;
  int period_;
  int copies_;
  std::vector<std::vector<std::uint32_t>> orbit_;  // by class: the link copy k takes
  std::vector<std::uint32_t> position_;            // link -> a copy k of its class that takes it
  std::vector<std::uint32_t> class_of_;            // link -> class
  std::vector<int> class_size_;                    // distinct links in each class
  std::vector<bool> class_uniform_;                // whether a class's links have one bandwidth
};

// The symmetries worth trying for a source of `nranks` ranks: its rotation periods (divisors of
// nranks that are multiples of the declared rotation period, smallest first), then its XOR
// periods (powers of two from the declared one up to nranks / 2), ending with no folding
// (rotation by nranks), which is the only one when nothing is declared.
std::vector<Symmetry> fold_symmetries(const coll::StepSource& source);

// Whether every rank r of the source looks like its representative r mod period: as many steps,
// the same reduction rate (the rest of the symmetry is the source's declaration and the routes'
// Fold).
bool ranks_rotate(const coll::StepSource& source, const topo::Topology& topology, int period);

// Whether two of the first `nranks` ranks share a device with a reduction rate. Such ranks share
// its reduction queue in arrival order across them, which folding does not model.
bool ranks_share_a_reducing_device(const topo::Topology& topology, int nranks);

}  // namespace colltune::sim::detail
