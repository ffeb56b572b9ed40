#pragma once
// The event simulator's fast path for runs without contention (see event_sim_sweep.cpp).
#include <optional>

#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim::detail {

// The engine's result for `source`, if no directed link ever carries two transfers at once;
// nullopt as soon as one would, or when the schedule is malformed (the engine then reports it).
// Folds the run by the source's rotation symmetry where the machine shares it.
std::optional<EventSimResult> sweep_without_contention(const coll::StepSource& source,
                                                       const topo::Topology& topology,
                                                       const EventSimOptions& options);

}  // namespace colltune::sim::detail
