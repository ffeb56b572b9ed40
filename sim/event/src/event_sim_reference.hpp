#pragma once
// The reference event engine (event_sim_reference.cpp): the machine model of event_sim.hpp
// written for clarity, not speed. The fast engine is held to its results.
#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim::detail {

// Simulates `source` on `topology` with a full max-min solve whenever the set of transmitting
// flows changes. Same errors as the fast engine; refuses options.record_trace (colltune::Error).
EventSimResult simulate_reference(const coll::StepSource& source, const topo::Topology& topology,
                                  const EventSimOptions& options);

}  // namespace colltune::sim::detail
