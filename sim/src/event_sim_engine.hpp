#pragma once
// Internals of the discrete-event simulator (see event_sim.hpp for the machine model).
// event_sim.cpp: steps, rendezvous matching, flow start/end, the event loop.
// event_sim_rates.cpp: max-min fair bandwidth sharing (progressive filling) over the flows
// whose rates can have changed.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "colltune/collectives/schedule.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"
#include "event_sim_queue.hpp"

namespace colltune::sim::detail {

struct LinkState {
  double capacity = 0;                // bytes per us
  std::vector<std::uint32_t> flows;   // flows transmitting on it now
  double bytes = 0;                   // bytes carried so far
  double busy_us = 0;
  double busy_since = 0;
  // progressive-filling scratch
  double remaining = 0;               // capacity not yet given to frozen flows
  std::uint32_t unfrozen = 0;         // flows on it whose rate is not fixed yet
  std::uint32_t version = 0;          // invalidates stale heap entries
  double key = 0;                     // share its live heap entry was pushed with
  std::uint64_t mark = 0;             // component search epoch
};

struct FlowState {
  int src = 0;
  int dst = 0;
  std::uint32_t send_op = 0;          // op index in src's current step
  std::uint32_t recv_op = 0;          // op index in dst's current step
  std::uint32_t chan = 0;             // its channel (src->dst): stands for its path
  const topo::Path* path = nullptr;
  double bytes = 0;
  double left = 0;                    // bytes still to transmit at last_t
  double rate = 0;                    // bytes per us
  double new_rate = -1;               // progressive-filling result; -1 = not fixed yet
  double last_t = 0;
  double start_t = 0;
  std::uint32_t version = 0;          // invalidates stale end events
  std::uint64_t mark = 0;
  bool reduce = false;
  bool on_links = false;
  bool arriving = false;              // transmitted; waiting for its arrival to be reduced
};

// A posted op waiting for its peer: what the transfer needs of it, so that pairing it later does
// not read the (possibly evicted) schedule again.
struct Pending {
  std::uint32_t op = 0;       // op index in the rank's current step
  bool reduce = false;        // a recv_reduce
  std::size_t count = 0;      // elements
};

// Sends a->b and receives at b from a that are posted but not yet paired, in posting order.
struct Channel {
  const topo::Path* path = nullptr;
  std::vector<Pending> sends;
  std::vector<Pending> recvs;
  std::size_t send_head = 0;
  std::size_t recv_head = 0;
};

struct RankState {
  std::size_t step = 0;               // current step
  std::size_t nsteps = 0;             // steps of the rank
  std::span<const coll::Op> ops;      // the current step's ops (valid until the next step)
  std::vector<coll::Op> scratch;      // where a generated source writes them
  std::uint32_t outstanding = 0;      // ops of the step not yet completed
  double step_end = 0;                // latest completion among the step's ops
  bool finished = false;
  double finish_us = 0;
  std::vector<std::pair<int, std::uint32_t>> out;  // peer -> channel of sends to it, by peer
};

struct HeapEntry {
  double share = 0;
  std::uint32_t link = 0;
  std::uint32_t version = 0;
  bool operator>(const HeapEntry& o) const { return share != o.share ? share > o.share : link > o.link; }
};

// The checks every interpreter of a StepSource makes first: rank count against the topology,
// a positive element size. Throws colltune::Error.
void check_simulable(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options);

class Engine {
 public:
  Engine(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options);
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
  void start_flow(std::uint32_t chan, const Pending& send, const Pending& recv, int src, int dst, double t);
  std::uint32_t new_flow();
  void end_flow(std::uint32_t f, double t);
  void reduce_arrival(std::uint32_t f, double t);
  void release_flow(std::uint32_t f);
  void complete_op(int rank, double done_t);
  void record_transfer(const FlowState& flow, double arrival);
  const coll::Op& current_op(int rank, std::uint32_t index) const;
  void check_finished() const;
  EventSimResult collect();

  // event_sim_rates.cpp
  void update_rates(double t);
  void visit_link(std::size_t link);
  void visit_flow(std::uint32_t f);
  void expand_component();
  bool alone_on_links(const FlowState& flow) const;
  void fill_progressively();
  void apply_rates(double t);
  void set_rate(std::uint32_t f, double rate, double t);

  const coll::StepSource& source_;
  const coll::ScheduleHeader& header_;
  const topo::Topology& topology_;
  EventSimOptions options_;
  std::vector<double> gamma_;        // us per byte reduced, per rank
  std::vector<double> reduce_free_;  // when each rank's device finishes its queued reductions
  std::vector<RankState> ranks_;
  std::vector<Channel> channels_;
  std::vector<LinkState> links_;
  std::vector<FlowState> flows_;
  std::vector<std::uint32_t> free_flows_;
  EventQueue queue_;
  std::vector<Event> instant_;  // the events being handled
  // flows whose rates must be (re)computed at the end of the current instant
  std::vector<std::uint32_t> new_flows_;
  std::vector<std::size_t> dirty_links_;
  // component search and progressive-filling scratch, reused
  std::uint64_t epoch_ = 0;
  std::vector<std::size_t> comp_links_;
  std::vector<std::uint32_t> comp_flows_;
  std::vector<std::size_t> stack_;
  std::vector<HeapEntry> heap_;
  std::vector<HeapEntry> repushed_;
  // Max-min rates depend only on which paths the component's flows take (with multiplicity):
  // solved components are remembered by their multiset of channels and reused when it recurs.
  struct Solved {
    std::vector<std::uint32_t> chans;   // distinct channels
    std::vector<std::uint32_t> counts;  // flows on each
    std::vector<double> rates;          // each one's rate
  };
  bool recall_rates();
  void remember_rates();
  std::vector<std::uint32_t> chan_count_;  // per channel, flows of the component (scratch, kept 0)
  std::vector<double> chan_rate_;          // per channel scratch
  std::vector<std::uint32_t> comp_chans_;
  std::uint64_t comp_hash_ = 0;
  std::vector<Solved> solved_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> solved_index_;
  std::size_t solved_size_ = 0;            // channels stored over all of solved_
  EventSimResult result_;
};

}  // namespace colltune::sim::detail
