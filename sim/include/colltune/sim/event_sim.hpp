#pragma once
// The discrete-event simulator: executes a Schedule on a Topology. Every send becomes a flow
// along the route between the two ranks' devices; each directed link is a shared resource whose
// bandwidth is divided among the flows crossing it (the sharing model is documented in
// event_sim.cpp and the README); every hop adds its latency; a received block that is reduced
// costs its bytes at the receiving device's reduction rate.
#include <cstddef>
#include <string>
#include <vector>

#include "colltune/collectives/schedule.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

struct EventSimOptions {
  std::size_t elem_size = 4;    // bytes per element of the schedule's blocks
  bool record_trace = false;    // keep per-op slices for a Chrome trace
};

struct LinkUsage {
  std::size_t link = 0;   // topology link index
  double bytes = 0;       // bytes carried
  double busy_us = 0;     // time with at least one flow on it
};

struct TraceSlice {
  int rank = 0;
  std::string name;       // "send 3->4 [0,1024)", "recv", "reduce"
  double start_us = 0;
  double end_us = 0;
};

struct EventSimResult {
  double time_us = 0;                  // when the last rank finishes
  std::vector<double> rank_finish_us;  // per rank
  std::vector<LinkUsage> links;        // links that carried bytes
  std::size_t events = 0;              // events processed (for events/second)
  std::vector<TraceSlice> trace;       // when record_trace
};

// Throws colltune::Error if the schedule has more ranks than the topology.
EventSimResult simulate_schedule(const coll::Schedule& schedule, const topo::Topology& topology,
                                 const EventSimOptions& options = {});

}  // namespace colltune::sim
