#pragma once
// The contention-free sweep over classes of ranks that provably behave the same
// (event_sim_classes.cpp): its cost follows the run's asymmetry (a late rank, a segment larger
// than the others), not its rank count.
#include <optional>

#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim::detail {

// The engine's result for `source` (any start times), computed by classes of identical blocks
// of ranks; nullopt when the run is not one this sweep handles (no structural rotation the
// machine shares, not lockstep, links carrying more than one channel, too many classes), in
// which case nothing is lost but the time spent.
std::optional<EventSimResult> sweep_by_classes(const coll::StepSource& source, const topo::Topology& topology,
                                               const EventSimOptions& options);

}  // namespace colltune::sim::detail
