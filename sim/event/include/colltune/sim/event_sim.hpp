#pragma once
// The discrete-event simulator: executes a Schedule on a Topology. Every send becomes a flow
// along the route between the two ranks' devices; each directed link is a shared resource whose
// bandwidth is divided among the flows crossing it (the sharing model is documented in
// event_sim.cpp and the README); every hop adds its latency; a received block that is reduced
// costs its bytes at the receiving device's reduction rate.
//
// The machine model, exactly:
// - A rank runs its steps in order; a step starts when the previous one ended (step 0 at the
//   rank's start time: EventSimOptions::rank_start_us, 0 by default) and ends when every op of
//   it has completed. A late rank delays exactly the transfers that need it, and through them
//   whoever waits on those (the ring's neighbours step by step, a tree's ancestors).
// - Rendezvous: the k-th send a->b and the k-th receive at b from a form one transfer, which
//   starts when the sender has started the step holding the send AND the receiver has started
//   the step holding the receive.
// - A transfer is a flow along topology.route(a, b, c), c the op channel (coll::Op::channel)
//   that both its send and its receive carry (a schedule whose paired ops disagree is an
//   error): between hosts with NICs, the channel picks the NICs, as NCCL's channels do. Each
//   directed link's bandwidth is shared max-min fairly among the flows crossing it (progressive filling), recomputed whenever the
//   set of flows changes. The flow transmits its bytes at its current rate; its last byte
//   arrives the path latency after it was transmitted. Both the send and the receive complete
//   at that arrival; a recv_reduce then costs bytes / reduce rate of the receiving device,
//   which reduces one block at a time, in arrival order (a device's reduction rate is its
//   memory bandwidth: two blocks arriving together take twice as long). Ranks mapped to one
//   device share its queue; blocks arriving at one instant are reduced in order of receiving
//   rank. A device without a reduction rate (reduce_gbps 0) reduces at no cost.
// - Zero-byte transfers and transfers between ranks on one device take only the path latency.
//
// Two engines implement this model (docs/event-simulator.md):
// - the reference engine (event_sim_reference.cpp): a plain event loop that re-solves the
//   max-min rates of every flow from scratch whenever the set of flows changes. It is the
//   definition the fast engine is held to, too slow for large runs.
// - the fast engine (the default): the same loop with an incremental max-min solver
//   (event_sim_solver.cpp, event_sim_recall.cpp), and for runs in which no directed link ever
//   carries two transfers at once (rings, most uncontended schedules) a sweep that fixes every
//   transfer's time when it starts and evaluates steps in time order without per-transfer
//   events, folded by rotation symmetry where the schedule and the machine share one
//   (event_sim_sweep.cpp, event_sim_fold.cpp); it falls back to the event queue at the first
//   shared link.
// Both report the same results (tests/sim/event/test_event_sim_reference.cpp compares them on random
// schedules and machines): time_us, rank_finish_us and every link's busy_us to rounding (1e-9 of
// the run's time), which links carried bytes and how many, flows and events exactly.
// fast_path_period and the *_solves counters describe the fast engine's work (0 for the
// reference); trace is the fast engine's only.
#include <cstddef>
#include <string>
#include <vector>

#include "colltune/collectives/schedule.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

enum class EventEngine {
  fast,       // the default: incremental solver, contention-free sweep, folding
  reference,  // the plain engine the fast one is checked against (no trace)
};

struct EventSimOptions {
  EventEngine engine = EventEngine::fast;
  std::size_t elem_size = 4;    // bytes per element of the schedule's blocks
  bool record_trace = false;    // keep per-op slices for a Chrome trace (fast engine, event queue)
  // A trace longer than this is refused (colltune::Error) rather than filling memory and disk:
  // Perfetto opens a few million slices; a 4096-rank ring has 67 M.
  std::size_t max_trace_slices = 2'000'000;
  // Fast engine: take the contention-free sweep and the folds where they apply, and find an
  // unfolded run's routes ahead on a second thread on 2,048 ranks or more (same results); false
  // forces the event queue throughout, on the calling thread alone (tests compare the two).
  bool fast_path = true;
  // When each rank starts its first step, us (a straggler arrives late at the collective).
  // Empty: every rank at 0. Otherwise one finite value >= 0 per rank of the schedule, else
  // colltune::Error. Ranks that start late are simulated by the sweep by classes where no link
  // is shared, else by the event queue, over every rank until they have caught up (every rank
  // starting one step's transfers at one instant), folded from there where the schedule and the
  // machine share a symmetry.
  std::vector<double> rank_start_us;
};

struct LinkUsage {
  std::size_t link = 0;   // topology link index
  double bytes = 0;       // bytes carried
  double busy_us = 0;     // time with at least one flow on it
};

struct TraceSlice {
  int rank = 0;
  std::string name;       // "send 3->4 [0,1024)", "recv 3->4 [0,1024)", "reduce 3->4 [0,1024)"
  double start_us = 0;
  double end_us = 0;
  std::size_t bytes = 0;  // bytes moved (send, recv) or reduced (reduce)
};

struct EventSimResult {
  double time_us = 0;                  // when the last rank finishes
  std::vector<double> rank_finish_us;  // per rank
  std::vector<LinkUsage> links;        // links that carried bytes, by link index
  std::size_t events = 0;              // events: step starts, flow starts and ends, reduction arrivals
  std::size_t flows = 0;               // transfers simulated
  std::vector<TraceSlice> trace;       // when record_trace
  // How the run was simulated: 0 = the event queue; d > 0 = the contention-free fast path over
  // ranks 0..d-1, each standing for its rotations by d (d = number of ranks: no folding).
  int fast_path_period = 0;
  // The event queue folded by rotation symmetry (event_queue_folded in event_sim_engine.hpp):
  // d > 0 = it ran ranks 0..d-1, each flow standing for its rotations by d; 0 = not folded.
  int event_fold_period = 0;
  // The step from which the event queue ran folded: 0 = from the start (or not folded); k > 0 =
  // ranks started late, every rank started step k's transfers at one instant (the late ranks
  // had caught up), and the steps from k ran folded (event_sim_refold.cpp).
  std::size_t event_fold_from_step = 0;
  // Whether that fold (of the sweep or of the event queue) was by XOR of the ranks
  // (StepSource::xor_period) rather than by rotation.
  bool fold_by_xor = false;
  // The sweep by classes of identical ranks (event_sim_classes.cpp: late ranks, uneven
  // segments): d > 0 = blocks of d ranks, each class of identical blocks simulated once; 0 = not
  // taken. max_classes: the most classes it held at once (its cost per step, in blocks).
  int class_period = 0;
  std::size_t max_classes = 0;
  // How the event queue re-solved the max-min rates where links are shared (0 for the sweep and
  // the reference engine): replayed incrementally (event_sim_solver.cpp), a remembered
  // solution (event_sim_recall.cpp), or progressive filling of the changed components.
  std::size_t incremental_solves = 0;
  std::size_t recalled_solves = 0;
  std::size_t full_solves = 0;
  // Routes of an unfolded run on many ranks that a second thread found before the event queue
  // asked for them (event_sim_prefetch.hpp; the same routes either way). It depends on how the
  // two threads ran: read it as a diagnostic, never as a result.
  std::size_t routes_found_ahead = 0;
};

// Simulates a schedule read step by step: a generated one (coll::open_schedule) or a stored
// one viewed as coll::StoredSteps(schedule). Throws colltune::Error if the schedule has more
// ranks than the topology, or if it is malformed (unmatched or size-mismatched send/receive, a
// deadlock): never hangs.
EventSimResult simulate_schedule(const coll::StepSource& source, const topo::Topology& topology,
                                 const EventSimOptions& options = {});

// Builds the request's schedule for the model's ranks and simulates it on `topology` (the one
// the model was derived from). fp16 compression as in CostModel: the schedule moves 2-byte
// elements and the cast time is added to time_us. Throws colltune::Error when the algorithm is
// unknown or not applicable.
EventSimResult simulate_collective(const CostModel& model, const topo::Topology& topology,
                                   const CollectiveRequest& request, const EventSimOptions& options = {});

// Several collectives running at the same time on disjoint rank sets (e.g. two communicators):
// group i's schedule runs on ranks[i][0..], its rank j mapped to ranks[i][j]. The result is one
// schedule over `nranks` ranks for simulate_schedule(coll::StoredSteps(...)) (not a valid single collective: it is not
// meant for coll::validate). Throws colltune::Error on overlapping or out-of-range ranks.
struct PlacedSchedule {
  const coll::Schedule* schedule = nullptr;
  std::vector<int> ranks;
};
coll::Schedule run_concurrently(const std::vector<PlacedSchedule>& groups, int nranks);

}  // namespace colltune::sim
