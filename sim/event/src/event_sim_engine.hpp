#pragma once
// Internals of the discrete-event simulator (see event_sim.hpp for the machine model).
// event_sim.cpp: steps, rendezvous matching, flow start/end, the event loop.
// event_sim_rates.cpp, event_sim_solver.cpp: max-min fair bandwidth sharing (progressive
// filling), re-solved where it can have changed (RateSolver, event_sim_solver.hpp).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "colltune/collectives/schedule.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"
#include "event_sim_fold.hpp"
#include "event_sim_prefetch.hpp"
#include "event_sim_queue.hpp"
#include "event_sim_solver.hpp"

namespace colltune::sim::detail {

struct alignas(64) LinkState {  // one cache line
  double capacity = 0;                // bytes per us
  std::vector<std::uint32_t> flows;   // flows transmitting on it now
  double bytes = 0;                   // bytes carried so far
  double busy_us = 0;
  double busy_since = 0;
  LinkTag solve;                      // the rate solver's (event_sim_solver.hpp)
};

struct FlowState {
  int src = 0;
  int dst = 0;
  std::uint32_t send_op = 0;          // op index in src's current step
  std::uint32_t recv_op = 0;          // op index in dst's current step
  std::uint32_t chan = 0;             // its route (src->dst on its op channel): stands for its path
  const topo::Path* path = nullptr;
  FlowSolve solve;                    // the rate solver's (event_sim_solver.hpp)
  double bytes = 0;
  double left = 0;                    // bytes still to transmit at last_t
  double rate = 0;                    // bytes per us
  double last_t = 0;
  double start_t = 0;
  std::uint32_t version = 0;          // invalidates stale end events
  bool reduce = false;
  bool on_links = false;
  bool arriving = false;              // transmitted; waiting for its arrival to be reduced
};

// A posted op waiting for its peer: what the transfer needs of it, so that pairing it later does
// not read the (possibly evicted) schedule again.
struct Pending {
  std::uint32_t op = 0;       // op index in the rank's current step
  std::uint16_t channel = 0;  // coll::Op::channel: picks the route between hosts
  bool reduce = false;        // a recv_reduce
  std::size_t count = 0;      // elements
};

// Sends a->b and receives at b from a that are posted but not yet paired, in posting order
// (the k-th send pairs with the k-th receive). Only one side can be waiting at a time: a post
// pairs with the other side's oldest op if there is one. Mostly one op waits at a time (a step's
// op for its peer's step): it waits in place, and the ops after it (several to one peer in a
// step, or steps ahead of the peer) in a list made on need, so that the 229,000 pairs of rhd on
// 16,384 ranks allocate nothing to wait.
class Rendezvous {
 public:
  // Pairs `me` (a send when `is_send`) with the oldest waiting op of the other side into
  // `other`, or queues it; true when paired.
  bool pair(bool is_send, const Pending& me, Pending& other) {
    if (waiting_ > 0 && sends_waiting_ != is_send) {
      other = oldest_;
      if (--waiting_ > 0) {  // the next one moves up: waiting_ - 1 are left in more_
        oldest_ = (*more_)[head_++];
        if (head_ == more_->size()) {
          more_->clear();
          head_ = 0;
        }
      }
      return true;
    }
    sends_waiting_ = is_send;
    if (waiting_ == 0) {
      oldest_ = me;
    } else {
      if (!more_) more_ = std::make_unique<std::vector<Pending>>();
      more_->push_back(me);
    }
    ++waiting_;
    return false;
  }

 private:
  Pending oldest_;             // valid when waiting_ > 0
  std::uint32_t waiting_ = 0;  // ops waiting: oldest_, then more_[head_..]
  std::uint32_t head_ = 0;
  bool sends_waiting_ = false;
  std::unique_ptr<std::vector<Pending>> more_;
};

// The sends a->b and receives at b from a pair in posting order whatever their op channel
// (schedule.hpp); each op channel of the pair has its own route (Topology::route), numbered in
// the engine's route table. Most pairs use one op channel: the first one's route is kept in
// place, the others' in a short list.
struct Channel {
  static constexpr std::uint32_t kNoRoute = 0xffffffffu;
  Rendezvous posted;
  std::uint16_t first_op_channel = 0;
  std::uint32_t first_route = kNoRoute;                               // its route id
  std::vector<std::pair<std::uint16_t, std::uint32_t>> other_routes;  // op channel -> route id
};

struct RankState {
  std::size_t step = 0;               // current step
  std::size_t nsteps = 0;             // steps of the rank
  std::span<const coll::Op> ops;      // the current step's ops (valid until the next step)
  std::vector<coll::Op> scratch;      // where a generated source writes them
  std::uint32_t outstanding = 0;      // ops of the step not yet completed
  double step_end = 0;                // latest completion among the step's ops
  bool finished = false;
  bool waiting_to_start = false;      // its start time (EventSimOptions::rank_start_us) is to come
  double finish_us = 0;
  std::vector<std::pair<int, std::uint32_t>> out;  // peer -> channel of sends to it, by peer
};

// What the rate solver reads on every visit lives in the links and flows (one cache miss, not
// two, per visit).
inline LinkTag& RateSolver::tag(std::size_t l) { return (*links_)[l].solve; }
inline const LinkTag& RateSolver::tag(std::size_t l) const { return (*links_)[l].solve; }
inline FlowSolve& RateSolver::fs(std::uint32_t f) { return (*flows_)[f].solve; }
inline const FlowSolve& RateSolver::fs(std::uint32_t f) const { return (*flows_)[f].solve; }

// us per byte reduced at the rank's device (0 when the device states no rate).
double rank_gamma(const topo::Topology& topology, int rank);

// The checks every interpreter of a StepSource makes first: rank count against the topology,
// a positive element size. Throws colltune::Error.
void check_simulable(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options);
// When the rank starts its first step (EventSimOptions::rank_start_us; 0 when empty).
double start_of(const EventSimOptions& options, int rank);

// Thrown by a folded Engine when a route it meets is not the rotation of its copies (the machine
// does not share the schedule's symmetry at that period): the run is redone at a longer one.
struct NotFoldable {};

class Engine {
 public:
  // A symmetry of period 1..nranks-1 folds the run (see event_queue_folded); period 0 or nranks
  // simulates every rank.
  Engine(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options,
         Symmetry symmetry = {});
  EventSimResult run();

 private:
  // Event ids: a rank index (its next step starts), or a flow index with one of these bits.
  static constexpr std::uint32_t kFlowBit = 0x80000000u;     // last byte transmitted
  static constexpr std::uint32_t kArrivalBit = 0x40000000u;  // a reduced block arrived
  static constexpr std::uint32_t kIndexMask = 0x3fffffffu;

  // event_sim.cpp
  void handle(const Event& ev, double t);
  void enter_step(int rank, double t);
  void post(int rank, std::uint32_t op_index, const coll::Op& op, double t);
  std::uint32_t channel(int src, int dst);
  std::uint32_t route_of(std::uint32_t chan, int src, int dst, std::uint16_t op_channel);
  const topo::Path* folded_route(int src, int dst, std::uint16_t op_channel);
  const topo::Path* unfolded_route(int src, int dst, std::uint16_t op_channel);
  int rank_of(int rank) const { return fold_ ? fold_->representative(rank) : rank; }
  void start_flow(std::uint32_t chan, const Pending& send, const Pending& recv, int src, int dst, double t);
  std::uint32_t new_flow();
  void end_flow(std::uint32_t f, double t);
  void reduce_arrivals(double t);
  void reduce_arrival(std::uint32_t f, double t);
  void release_flow(std::uint32_t f);
  void complete_op(int rank, double done_t);
  void record_transfer(const FlowState& flow, double arrival);
  const coll::Op& current_op(int rank, std::uint32_t index) const;
  void check_finished() const;
  EventSimResult collect();
  void unfold(EventSimResult& out) const;

  // event_sim_refold.cpp: late ranks that have caught up. Where every rank starts all of one
  // step's transfers at one instant, the rest of the run no longer depends on who was late, and
  // is the folded event queue's from that step.
  void count_entry(std::size_t step);
  bool together_in_step(double t) const;
  std::optional<EventSimResult> refold(double t);
  EventSimResult joined(EventSimResult rest, double t) const;

  // event_sim_rates.cpp
  void update_rates(double t);
  void set_rate(std::uint32_t f, double rate, double t);

  const coll::StepSource& source_;
  const coll::ScheduleHeader& header_;
  const topo::Topology& topology_;
  EventSimOptions options_;
  std::vector<double> gamma_;        // us per byte reduced, per rank
  std::vector<std::size_t> device_;  // each rank's device
  std::vector<double> reduce_free_;  // when each device finishes its queued reductions
  std::vector<std::uint32_t> arrived_;  // flows whose block to reduce arrived at this instant
  std::vector<RankState> ranks_;
  std::vector<Channel> channels_;
  std::vector<const topo::Path*> routes_;  // by route id (FlowState::chan)
  std::vector<LinkState> links_;
  std::vector<FlowState> flows_;
  std::vector<std::uint32_t> free_flows_;
  EventQueue queue_;
  std::vector<Event> instant_;  // the events being handled
  // flows whose rates must be (re)computed at the end of the current instant
  std::vector<std::uint32_t> new_flows_;
  std::vector<std::size_t> dirty_links_;
  RateSolver solver_;  // max-min rates, kept between instants
  EventSimResult result_;
  // Folded runs: ranks_ are the representatives 0..d-1, links_ the link classes (Fold), each
  // with its links' bandwidth over its multiplicity; routes_ point into folded_paths_.
  std::optional<Fold> fold_;
  std::deque<topo::Path> folded_paths_;
  std::vector<int> multiplicity_;  // by class
  // Unfolded runs with late ranks of a symmetric schedule (event_sim_refold.cpp): whether to try
  // folding the rest once the ranks are together again, and how many ranks entered each step.
  bool refold_ = false;
  std::vector<int> entered_;
  // Unfolded runs on many ranks: the routes found ahead on a second thread (last: it stops
  // before the rest goes).
  std::unique_ptr<RoutePrefetch> prefetch_;
};

// The event queue folded by symmetry: the engine's result computed on ranks 0..d-1, d the
// smallest of the source's rotation periods (StepSource::rotation_period), else of its XOR
// periods (StepSource::xor_period), that the machine shares, each flow standing for its p/d
// copies. nullopt when no period below p applies
// (none declared, ranks that differ, a device whose reduction queue ranks share, routes that
// are not rotations of each other, a link class whose links differ in bandwidth or that one
// route crosses twice) or when the schedule is malformed (the unfolded engine then reports it).
// Exact: by symmetry every copy of a flow has the same rate (max-min fair shares are unique),
// and a link class carrying m copies of each of its flows shares its bandwidth as one link of
// 1/m of it would.
std::optional<EventSimResult> event_queue_folded(const coll::StepSource& source, const topo::Topology& topology,
                                                 const EventSimOptions& options);

}  // namespace colltune::sim::detail
