// The reference event engine: the machine model of event_sim.hpp, rule by rule, written to be
// read rather than to be fast. The fast engine (event_sim.cpp with its incremental solver, its
// contention-free sweep and rotation folding) is held to its results on random schedules and
// machines (tests/sim/event/test_event_sim_reference.cpp, docs/event-simulator.md).
//
// The model's rules, as numbered here:
//   R1 A rank runs its steps in order (empty steps are skipped); a step starts when the previous
//      one ended (step 0 at t = 0) and ends when all its ops have completed.
//   R2 Rendezvous: the k-th send a->b and the k-th receive at b from a form one transfer, which
//      starts when both have been posted (each is posted when its rank starts its step).
//   R3 A transfer is a flow along topology.route(a, b, c), c the op channel its send and receive
//      both carry (an error where they differ). Each directed link's bandwidth is shared
//      max-min fairly among the flows crossing it (progressive filling), re-solved whenever the
//      set of flows changes. A flow sends its bytes at its current rate.
//   R4 A flow's last byte arrives the path latency after it was sent. The send and the receive
//      complete at that arrival; zero-byte transfers and transfers within one device (an empty
//      path) send nothing and take only the path latency.
//   R5 A recv_reduce on a device with a reduction rate then queues its block at the device,
//      which reduces one block at a time, in arrival order (blocks arriving at one instant in
//      order of receiving rank), each taking bytes / rate; the receive completes when its block
//      is reduced.
//
// The loop, with `now` the current instant:
//   1. settle `now`: flows whose last byte leaves at `now` leave their links (R3, R4); then the
//      happenings due at `now` are handled one by one (arrivals R4, reductions done R5), each
//      completed op possibly ending its rank's step and starting the next (R1), whose ops are
//      posted and paired (R2); when nothing else is due, the blocks that arrived at `now` join
//      their devices' queues (R5), and settling goes on until nothing is due at `now`;
//   2. if the set of flows changed, every flow's rate is solved again from scratch (R3): a flow
//      whose rate changed first accounts the bytes it sent at the old rate;
//   3. `now` moves to the earliest of a flow's last byte leaving and a pending happening.
// Counting: `events` counts step starts, transfer starts and ends, and blocks queued for a
// reduction, as the fast engine does; `flows` counts transfers.
#include "event_sim_reference.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "colltune/common/error.hpp"
#include "event_sim_engine.hpp"

namespace colltune::sim::detail {
namespace reference {  // its own names: the fast engine's (event_sim_engine.hpp) are hidden
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// A posted op waiting for its peer (R2).
struct Posted {
  int rank = 0;
  std::size_t step = 0;
  std::size_t count = 0;  // elements
  bool reduce = false;    // a recv_reduce
  std::uint16_t channel = 0;  // its op channel (R3)
};

// Sends src->dst and receives at dst from src not yet paired, oldest first (R2).
struct Channel {
  std::deque<Posted> sends;
  std::deque<Posted> recvs;
};

// One transfer (a paired send and receive) and, while it sends, its flow (R3).
struct Transfer {
  int src = 0;
  int dst = 0;
  double bytes = 0;
  bool reduce = false;
  const topo::Path* path = nullptr;
  double left = 0;   // bytes still to send at `since`
  double rate = 0;   // bytes per us from `since` on (0: not solved yet)
  double since = 0;
};

struct RankState {
  std::size_t step = 0;          // its current step
  std::vector<coll::Op> ops;     // the current step's ops
  std::size_t outstanding = 0;   // ops of the current step not completed yet
  bool finished = false;
  double finish_us = 0;
};

struct LinkState {
  double capacity = 0;           // bytes per us
  int flows = 0;                 // flows crossing it now
  double busy_since = 0;
  double bytes = 0;
  double busy_us = 0;
};

enum class Kind { arrival, reduced, start };  // start: a late rank's first step (transfer = rank)
struct Happening {
  Kind kind = Kind::arrival;
  std::size_t transfer = 0;
};

// Progressive filling (R3) over flows with routes `paths`: every link offers its remaining
// capacity equally to the flows on it whose rate is not fixed yet; the link with the least such
// share (the lower link index on a tie) fixes all those flows at that share, which is taken off
// every other link they cross; this repeats until every flow has a rate (bytes per us). The
// links wait in order of (share, link), each re-entered whenever its share changes.
std::vector<double> max_min_rates(const std::vector<const topo::Path*>& paths, const std::vector<LinkState>& links) {
  struct Share {
    double remaining = 0;
    std::size_t unfixed = 0;
    std::vector<std::size_t> flows;
    double offer() const { return remaining / static_cast<double>(unfixed); }
  };
  std::map<std::size_t, Share> shares;  // the links crossed
  for (std::size_t f = 0; f < paths.size(); ++f)
    for (std::size_t l : paths[f]->links) {
      auto [it, fresh] = shares.try_emplace(l);
      if (fresh) it->second.remaining = links[l].capacity;
      it->second.flows.push_back(f);
      ++it->second.unfixed;
    }
  std::set<std::pair<double, std::size_t>> waiting;  // (share offered, link) of links with unfixed flows
  for (const auto& [l, share] : shares) waiting.emplace(share.offer(), l);
  std::vector<double> rate(paths.size(), -1.0);  // -1: not fixed yet
  while (!waiting.empty()) {
    const auto [least, link] = *waiting.begin();
    waiting.erase(waiting.begin());
    if (!(least > 0)) throw Error("reference event engine: link " + std::to_string(link) + " has no bandwidth left for its flows");
    for (std::size_t f : shares.at(link).flows) {
      if (rate[f] >= 0) continue;
      rate[f] = least;
      for (std::size_t l : paths[f]->links) {
        if (l == link) continue;
        Share& other = shares.at(l);
        if (other.unfixed == 0) continue;  // every flow on it is fixed: it has nothing to share
        waiting.erase({other.offer(), l});
        other.remaining = std::max(0.0, other.remaining - least);  // rounding may overshoot zero
        if (--other.unfixed > 0) waiting.emplace(other.offer(), l);
      }
    }
  }
  return rate;
}

std::string where(int rank, std::size_t step) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(step);
}

class ReferenceEngine {
 public:
  ReferenceEngine(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options);
  EventSimResult run();

 private:
  void enter_step(int rank);
  void post(int rank, const coll::Op& op);
  void start_transfer(const Posted& send, const Posted& recv);
  void stop_sending(std::size_t x);
  void complete_op(int rank);
  void settle();
  void finish_sending();
  void handle(const Happening& h);
  void queue_reductions();
  void solve_rates();
  double next_instant() const;
  EventSimResult collect() const;

  const coll::StepSource& source_;
  const coll::ScheduleHeader& header_;
  const topo::Topology& topology_;
  EventSimOptions options_;
  double now_ = 0;
  std::vector<RankState> ranks_;
  std::vector<double> gamma_;         // us per byte reduced, per rank (0: no reduction cost)
  std::vector<double> device_free_;   // when each device's reduction queue is idle (R5)
  std::vector<LinkState> links_;
  std::map<std::pair<int, int>, Channel> channels_;
  std::vector<Transfer> transfers_;
  std::vector<std::size_t> sending_;  // transfers whose flow is on its links
  bool flows_changed_ = false;
  std::multimap<double, Happening> pending_;  // equal times stay in insertion order
  std::vector<std::size_t> arrived_;  // blocks to reduce that arrived at `now`
  std::vector<coll::Op> scratch_;
  std::size_t events_ = 0;
};

ReferenceEngine::ReferenceEngine(const coll::StepSource& source, const topo::Topology& topology,
                                 const EventSimOptions& options)
    : source_(source), header_(source.header()), topology_(topology), options_(options) {
  check_simulable(source, topology, options);
  if (options.record_trace) throw Error("event simulator: the reference engine records no trace (use the fast engine)");
  ranks_.resize(static_cast<std::size_t>(header_.nranks));
  for (int r = 0; r < header_.nranks; ++r) gamma_.push_back(rank_gamma(topology, r));
  device_free_.assign(topology.num_devices(), 0.0);
  links_.resize(topology.num_links());
  for (std::size_t l = 0; l < links_.size(); ++l) links_[l].capacity = topology.link(l).bandwidth_gbps * 1e3;
}

EventSimResult ReferenceEngine::run() {
  for (int r = 0; r < header_.nranks; ++r) {
    const double start = start_of(options_, r);
    if (start > 0) {
      pending_.emplace(start, Happening{Kind::start, static_cast<std::size_t>(r)});
    } else {
      enter_step(r);
    }
  }
  for (;;) {
    settle();
    solve_rates();
    const double next = next_instant();
    if (next == kNever) break;
    now_ = next;
  }
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const RankState& rs = ranks_[r];
    if (!rs.finished)
      throw Error("schedule '" + header_.algorithm + "': deadlock, " + where(static_cast<int>(r), rs.step) +
                  " waits for " + std::to_string(rs.outstanding) +
                  " op(s) whose peers never post a matching send/receive");
  }
  return collect();
}

// R1: the rank starts its current step now (skipping empty ones) and posts its ops, or finishes.
void ReferenceEngine::enter_step(int rank) {
  RankState& rs = ranks_[static_cast<std::size_t>(rank)];
  const std::size_t nsteps = source_.num_steps(rank);
  for (; rs.step < nsteps; ++rs.step) {
    const std::span<const coll::Op> ops = source_.ops(rank, rs.step, scratch_);
    if (ops.empty()) continue;
    rs.ops.assign(ops.begin(), ops.end());
    rs.outstanding = rs.ops.size();
    ++events_;
    for (const coll::Op& op : rs.ops) post(rank, op);
    return;
  }
  rs.finished = true;
  rs.finish_us = now_;
}

// R2: a posted op pairs with the oldest waiting op of the other side of its channel, or waits.
void ReferenceEngine::post(int rank, const coll::Op& op) {
  const std::size_t step = ranks_[static_cast<std::size_t>(rank)].step;
  if (op.peer < 0 || op.peer >= header_.nranks || op.peer == rank)
    throw Error("schedule '" + header_.algorithm + "': " + where(rank, step) + ": peer " + std::to_string(op.peer) +
                " out of range or self");
  const bool is_send = op.kind == coll::OpKind::send;
  const Posted me{rank, step, op.block.count, op.kind == coll::OpKind::recv_reduce, op.channel};
  Channel& ch = channels_[is_send ? std::make_pair(rank, op.peer) : std::make_pair(op.peer, rank)];
  std::deque<Posted>& others = is_send ? ch.recvs : ch.sends;
  if (others.empty()) {
    (is_send ? ch.sends : ch.recvs).push_back(me);
    return;
  }
  const Posted other = others.front();
  others.pop_front();
  if (is_send) {
    start_transfer(me, other);
  } else {
    start_transfer(other, me);
  }
}

// R2-R4: the transfer starts now; its flow joins its links, or (nothing to send) it is sent at once.
void ReferenceEngine::start_transfer(const Posted& send, const Posted& recv) {
  if (send.count != recv.count)
    throw Error("schedule '" + header_.algorithm + "': send of " + std::to_string(send.count) + " elements at " +
                where(send.rank, send.step) + " is received as " + std::to_string(recv.count) + " elements at " +
                where(recv.rank, recv.step));
  if (send.channel != recv.channel)
    throw Error("schedule '" + header_.algorithm + "': send on channel " + std::to_string(send.channel) + " at " +
                where(send.rank, send.step) + " is received on channel " + std::to_string(recv.channel) + " at " +
                where(recv.rank, recv.step));
  Transfer x;
  x.src = send.rank;
  x.dst = recv.rank;
  x.bytes = static_cast<double>(send.count) * static_cast<double>(options_.elem_size);
  x.reduce = recv.reduce;
  x.path = &topology_.route(x.src, x.dst, send.channel);
  x.left = x.bytes;
  x.since = now_;
  transfers_.push_back(x);
  const std::size_t id = transfers_.size() - 1;
  ++events_;  // the transfer's start
  if (x.bytes == 0 || x.path->links.empty()) {
    stop_sending(id);
    return;
  }
  for (std::size_t l : x.path->links)
    if (links_[l].flows++ == 0) links_[l].busy_since = now_;
  sending_.push_back(id);
  flows_changed_ = true;
}

// R4: transfer x's last byte leaves now (its flow, if it had one, has left its links); it
// arrives the path latency later.
void ReferenceEngine::stop_sending(std::size_t x) {
  ++events_;  // the transfer's end
  pending_.emplace(now_ + transfers_[x].path->latency_us, Happening{Kind::arrival, x});
}

// R1: one op of the rank's current step completed now; the last one ends the step.
void ReferenceEngine::complete_op(int rank) {
  RankState& rs = ranks_[static_cast<std::size_t>(rank)];
  if (--rs.outstanding > 0) return;
  ++rs.step;
  enter_step(rank);
}

// Step 1 of the loop: everything due at `now`, until nothing is (time does not pass meanwhile,
// so a flow started now cannot end now).
void ReferenceEngine::settle() {
  finish_sending();
  for (;;) {
    if (!pending_.empty() && pending_.begin()->first <= now_) {
      const Happening h = pending_.begin()->second;
      pending_.erase(pending_.begin());
      handle(h);
    } else if (!arrived_.empty()) {
      queue_reductions();
    } else {
      return;
    }
  }
}

// R3, R4: flows whose last byte leaves now leave their links.
void ReferenceEngine::finish_sending() {
  std::vector<std::size_t> still;
  for (std::size_t id : sending_) {
    const Transfer& x = transfers_[id];
    if (x.since + x.left / x.rate > now_) {
      still.push_back(id);
      continue;
    }
    for (std::size_t l : x.path->links) {
      LinkState& link = links_[l];
      link.bytes += x.bytes;
      if (--link.flows == 0) link.busy_us += now_ - link.busy_since;
    }
    flows_changed_ = true;
    stop_sending(id);
  }
  sending_ = std::move(still);
}

void ReferenceEngine::handle(const Happening& h) {
  if (h.kind == Kind::start) {  // R1 for a rank that starts late
    enter_step(static_cast<int>(h.transfer));
    return;
  }
  const Transfer x = transfers_[h.transfer];  // a copy: completing an op may start transfers
  if (h.kind == Kind::reduced) {  // R5: the block is reduced: the receive completes
    complete_op(x.dst);
    return;
  }
  // R4: the last byte arrived: the send completes; so does the receive, unless it reduces (R5).
  complete_op(x.src);
  if (x.reduce && gamma_[static_cast<std::size_t>(x.dst)] > 0) {
    arrived_.push_back(h.transfer);
  } else {
    complete_op(x.dst);
  }
}

// R5: the blocks that arrived now join their devices' queues, by receiving rank.
void ReferenceEngine::queue_reductions() {
  std::vector<std::size_t> blocks;
  std::swap(blocks, arrived_);
  std::stable_sort(blocks.begin(), blocks.end(),
                   [&](std::size_t a, std::size_t b) { return transfers_[a].dst < transfers_[b].dst; });
  for (std::size_t id : blocks) {
    const Transfer& x = transfers_[id];
    double& device_free = device_free_[topology_.device_of_rank(x.dst)];
    const double start = std::max(now_, device_free);
    device_free = start + x.bytes * gamma_[static_cast<std::size_t>(x.dst)];
    ++events_;  // the block's arrival at the queue
    pending_.emplace(device_free, Happening{Kind::reduced, id});
  }
}

// R3: every sending flow's max-min rate, from scratch; a flow whose rate changes first accounts
// what it sent at the old rate.
void ReferenceEngine::solve_rates() {
  if (!flows_changed_) return;
  flows_changed_ = false;
  std::vector<const topo::Path*> paths;
  for (std::size_t id : sending_) paths.push_back(transfers_[id].path);
  const std::vector<double> rates = max_min_rates(paths, links_);
  for (std::size_t i = 0; i < sending_.size(); ++i) {
    Transfer& x = transfers_[sending_[i]];
    if (rates[i] == x.rate) continue;
    x.left = std::max(0.0, x.left - x.rate * (now_ - x.since));
    x.since = now_;
    x.rate = rates[i];
  }
}

// The earliest of a flow's last byte leaving and a pending happening (kNever: nothing is left).
double ReferenceEngine::next_instant() const {
  double next = pending_.empty() ? kNever : pending_.begin()->first;
  for (std::size_t id : sending_) {
    const Transfer& x = transfers_[id];
    next = std::min(next, x.since + x.left / x.rate);
  }
  return next;
}

EventSimResult ReferenceEngine::collect() const {
  EventSimResult out;
  for (const RankState& rs : ranks_) {
    out.rank_finish_us.push_back(rs.finish_us);
    out.time_us = std::max(out.time_us, rs.finish_us);
  }
  for (std::size_t l = 0; l < links_.size(); ++l)
    if (links_[l].bytes > 0) out.links.push_back({l, links_[l].bytes, links_[l].busy_us});
  out.events = events_;
  out.flows = transfers_.size();
  return out;
}

}  // namespace
}  // namespace reference

EventSimResult simulate_reference(const coll::StepSource& source, const topo::Topology& topology,
                                  const EventSimOptions& options) {
  reference::ReferenceEngine engine(source, topology, options);
  return engine.run();
}

}  // namespace colltune::sim::detail
