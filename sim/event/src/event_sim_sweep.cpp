// The contention-free sweep: the event simulator's fast path.
//
// While no directed link carries two transfers at once, max-min sharing never engages: every
// transfer runs at its path's bottleneck bandwidth from start to end, so the moment it starts its
// end (start + bytes / bottleneck), its arrival (+ path latency) and the completion of both its
// ops are fixed. The sweep therefore needs one event per step instead of ~3.5 per transfer: it
// walks the steps in time order like the engine (event_sim.cpp), pairs sends and receives in
// order per channel, resolves each transfer as it starts, and when the last op of a rank's step
// is resolved, runs the step's reductions in arrival order on the device's queue and schedules
// the rank's next step at the step's end.
//
// The premise is checked as the sweep goes. A transfer starts when the later of its two ops is
// posted, at the instant being handled, so transfers start in time order: one that would start
// on a link before the previous transfer on it has sent its last byte (or at the same instant)
// is contention, and the sweep gives up at once; simulate_schedule then runs the event engine from
// the start. When the premise holds throughout, the results are the engine's, computed with the
// same expressions (tests compare both on every algorithm and several topologies), and `events`
// counts the engine's events: step starts, transfer starts and ends, reduction arrivals.
//
// Ranks that share a device with a reduction rate share its reduction queue across ranks, which
// the sweep does not model: such runs take the event queue from the start.
//
// Symmetry (event_sim_fold.hpp): the sweep runs ranks 0..d-1 only, d a rotation period of the
// schedule that the machine's routes share, and every transfer it resolves stands for its p/d
// rotated copies; links are tracked per orbit. A 4096-rank ring on a flat or fat-tree machine
// folds to one node's ranks. d = p is the plain sweep.
#include "event_sim_sweep.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "event_sim_engine.hpp"
#include "event_sim_fold.hpp"
#include "event_sim_queue.hpp"

namespace colltune::sim::detail {
namespace {

constexpr double kNever = -std::numeric_limits<double>::infinity();

enum class Outcome { done, contention, asymmetric, malformed };

// The traffic of one link class (every link of the class carries exactly this).
struct ClassState {
  double last_start = kNever;  // the latest transfer on it: [last_start, last_end)
  double last_end = kNever;
  double bytes = 0;
  double busy_us = 0;
  int multiplicity = 1;        // copies of each transfer a link of the class carries at once
};

// A channel src -> dst up to rotation: its posted ops not yet paired, and what a transfer needs
// of the route of each op channel it carries (coll::Op::channel; most carry one).
struct SweepChannel {
  int src_rep = 0;                // the sending and receiving representatives
  int dst_rep = 0;
  int dst = 0;                    // the receiver of the representative's copy
  std::vector<std::pair<std::uint16_t, FoldedRoute>> routes;
  Rendezvous posted;
};

struct Arrival {
  double t = 0;
  double bytes = 0;
};

// A representative's most recent channel in one direction: looked up before the channel table
// (a ring rank has one peer each way).
struct LastChannel {
  int peer = -1;
  std::uint32_t chan = 0;
};

// A representative rank's state.
struct SweepRank {
  std::size_t step = 0;
  std::size_t nsteps = 0;
  std::uint32_t unresolved = 0;   // ops of the current step not yet paired
  double step_end = 0;
  double reduce_free = 0;         // when the device's reduction queue is idle (the rank's alone)
  double gamma = 0;               // us per byte reduced
  LastChannel last_out;           // of its sends
  LastChannel last_in;            // of its receives
  std::vector<Arrival> reduces;   // blocks of this step waiting for the device, to order by arrival
  bool finished = false;
  double finish_us = 0;
};

class Sweep {
 public:
  Sweep(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options,
        Symmetry symmetry);
  Outcome run();
  EventSimResult result() const;

 private:
  Outcome enter_step(int rank, double t);
  Outcome post(int rank, const coll::Op& op, double t);
  std::uint32_t channel_of(int rank, const coll::Op& op);
  std::uint32_t find_channel(int src, int dst);
  const FoldedRoute* route_of(SweepChannel& ch, std::uint16_t op_channel);
  Outcome transfer(std::uint32_t chan, const Pending& send, const Pending& recv, double t);
  void resolved(int rank, double done_t);
  void finish_step(int rank);

  const coll::StepSource& source_;
  const topo::Topology& topology_;
  EventSimOptions options_;
  int nranks_;
  Fold fold_;
  std::vector<SweepRank> ranks_;  // the representatives
  std::vector<SweepChannel> channels_;
  std::unordered_map<std::uint64_t, std::uint32_t> channel_ids_;  // (src rep, dst) -> channel
  std::vector<ClassState> classes_;
  std::vector<coll::Op> scratch_;
  EventQueue queue_;           // step starts: Event::id is the representative rank
  std::vector<Event> instant_;
  std::size_t events_ = 0;
  std::size_t flows_ = 0;
};

Sweep::Sweep(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options,
             Symmetry symmetry)
    : source_(source), topology_(topology), options_(options), nranks_(source.header().nranks),
      fold_(topology, nranks_, symmetry) {
  check_simulable(source, topology, options);
  const int period = symmetry.period;
  ranks_.resize(static_cast<std::size_t>(period));
  for (int r = 0; r < period; ++r) {
    ranks_[static_cast<std::size_t>(r)].nsteps = source.num_steps(r);
    ranks_[static_cast<std::size_t>(r)].gamma = rank_gamma(topology, r);
  }
}

Outcome Sweep::run() {
  // Every rank must look like its representative: as many steps, the same reduction rate.
  if (!ranks_rotate(source_, topology_, fold_.period())) return Outcome::asymmetric;
  for (int r = 0; r < fold_.period(); ++r)
    if (Outcome o = enter_step(r, 0.0); o != Outcome::done) return o;
  while (!queue_.empty()) {
    const double t = queue_.pop_instant(instant_);
    for (const Event& ev : instant_) {
      ++ranks_[ev.id].step;
      if (Outcome o = enter_step(static_cast<int>(ev.id), t); o != Outcome::done) return o;
    }
  }
  for (const SweepRank& rs : ranks_)
    if (!rs.finished) return Outcome::malformed;  // a deadlock: the engine reports it
  return Outcome::done;
}

// Starts the representative's current step at t (skipping empty steps) and posts its ops.
Outcome Sweep::enter_step(int rank, double t) {
  SweepRank& rs = ranks_[static_cast<std::size_t>(rank)];
  std::span<const coll::Op> ops;
  for (; rs.step < rs.nsteps; ++rs.step) {
    ops = source_.ops(rank, rs.step, scratch_);
    if (!ops.empty()) break;
  }
  if (rs.step >= rs.nsteps) {
    rs.finished = true;
    rs.finish_us = t;
    return Outcome::done;
  }
  ++events_;
  rs.unresolved = static_cast<std::uint32_t>(ops.size());
  rs.step_end = t;
  for (const coll::Op& op : ops)
    if (Outcome o = post(rank, op, t); o != Outcome::done) return o;
  return Outcome::done;
}

Outcome Sweep::post(int rank, const coll::Op& op, double t) {
  if (op.peer < 0 || op.peer >= nranks_ || op.peer == rank) return Outcome::malformed;
  const std::uint32_t c = channel_of(rank, op);
  const bool is_send = op.kind == coll::OpKind::send;
  const Pending me{0, op.channel, op.kind == coll::OpKind::recv_reduce, op.block.count};
  Pending other;
  if (!channels_[c].posted.pair(is_send, me, other)) return Outcome::done;
  return is_send ? transfer(c, me, other, t) : transfer(c, other, me, t);
}

// The channel of the representative's op. A receive at `rank` from `peer` is the rotation of
// the channel (peer's representative -> rank shifted alike), so both ends find one channel.
std::uint32_t Sweep::channel_of(int rank, const coll::Op& op) {
  SweepRank& rs = ranks_[static_cast<std::size_t>(rank)];
  const bool is_send = op.kind == coll::OpKind::send;
  LastChannel& last = is_send ? rs.last_out : rs.last_in;
  if (last.peer == op.peer) return last.chan;
  const std::uint32_t c = is_send ? find_channel(rank, op.peer)
                                  : find_channel(fold_.representative(op.peer),
                                                 fold_.shift(rank, fold_.to_representative(op.peer)));
  last = {op.peer, c};
  return c;
}

// The channel src -> dst, src a representative: looked up, or created (its routes are added,
// and checked for rotation symmetry, by route_of() as its op channels come).
std::uint32_t Sweep::find_channel(int src, int dst) {
  const std::uint64_t key = static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(nranks_) +
                            static_cast<std::uint64_t>(dst);
  if (auto it = channel_ids_.find(key); it != channel_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(channels_.size());
  channels_.emplace_back();
  channels_.back().src_rep = src;
  channels_.back().dst_rep = fold_.representative(dst);
  channels_.back().dst = dst;
  channel_ids_.emplace(key, id);
  return id;
}

// The route of the channel's op channel `op_channel`: looked up, or added after checking that
// its copies' routes are its rotation (nullptr when they are not).
const FoldedRoute* Sweep::route_of(SweepChannel& ch, std::uint16_t op_channel) {
  for (const auto& [c, route] : ch.routes)
    if (c == op_channel) return &route;
  std::optional<FoldedRoute> route = fold_.add_channel(ch.src_rep, ch.dst, op_channel);
  if (!route) return nullptr;
  classes_.resize(fold_.num_classes());
  for (std::uint32_t cls : route->classes) classes_[cls].multiplicity = fold_.multiplicity(cls);
  ch.routes.emplace_back(op_channel, std::move(*route));
  return &ch.routes.back().second;
}

// The transfer of a paired send and receive, starting now (t): fixed end, arrival, completions.
Outcome Sweep::transfer(std::uint32_t chan, const Pending& send, const Pending& recv, double t) {
  if (send.count != recv.count || send.channel != recv.channel) return Outcome::malformed;
  const SweepChannel& ch = channels_[chan];
  const FoldedRoute* route = route_of(channels_[chan], send.channel);
  if (route == nullptr) return Outcome::asymmetric;
  const double bytes = static_cast<double>(send.count) * static_cast<double>(options_.elem_size);
  double end = t;
  if (bytes != 0 && !route->classes.empty()) {
    for (std::uint32_t c : route->classes) {
      const ClassState& cls = classes_[c];
      if (cls.multiplicity > 1 || t < cls.last_end || t == cls.last_start) return Outcome::contention;
    }
    end = t + bytes / route->rate;
    for (std::uint32_t c : route->classes) {
      ClassState& cls = classes_[c];
      if (t == cls.last_start) return Outcome::contention;  // two hops of this route in one class
      cls.last_start = t;
      cls.last_end = end;
      cls.bytes += bytes;
      cls.busy_us += end - t;
    }
  }
  events_ += 2;  // the transfer's start and end
  ++flows_;
  const double arrival = end + route->latency_us;
  const int src = ch.src_rep;
  const int dst = ch.dst_rep;
  if (recv.reduce && ranks_[static_cast<std::size_t>(dst)].gamma > 0) {
    ++events_;  // its arrival at the reduction queue
    ranks_[static_cast<std::size_t>(dst)].reduces.push_back({arrival, bytes});
    resolved(src, arrival);
    resolved(dst, kNever);
    return Outcome::done;
  }
  resolved(src, arrival);
  resolved(dst, arrival);
  return Outcome::done;
}

void Sweep::resolved(int rank, double done_t) {
  SweepRank& rs = ranks_[static_cast<std::size_t>(rank)];
  rs.step_end = std::max(rs.step_end, done_t);
  if (--rs.unresolved == 0) finish_step(rank);
}

// Every op of the rank's step is paired: reduce the step's blocks in arrival order (the device
// queue) and schedule the next step at the step's end.
void Sweep::finish_step(int rank) {
  SweepRank& rs = ranks_[static_cast<std::size_t>(rank)];
  if (rs.reduces.size() > 1)
    std::stable_sort(rs.reduces.begin(), rs.reduces.end(),
                     [](const Arrival& a, const Arrival& b) { return a.t < b.t; });
  for (const Arrival& a : rs.reduces) {
    const double start = std::max(a.t, rs.reduce_free);
    rs.reduce_free = start + a.bytes * rs.gamma;
    rs.step_end = std::max(rs.step_end, rs.reduce_free);
  }
  rs.reduces.clear();
  queue_.push(Event{rs.step_end, static_cast<std::uint32_t>(rank), 0});
}

// The unfolded result: every rank as its representative, every link as its class.
EventSimResult Sweep::result() const {
  EventSimResult out;
  const auto copies = static_cast<std::size_t>(fold_.copies());
  out.fast_path_period = fold_.period();
  out.fold_by_xor = fold_.symmetry().kind == Symmetry::Kind::exclusive_or;
  out.events = events_ * copies;
  out.flows = flows_ * copies;
  out.rank_finish_us.reserve(static_cast<std::size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) {
    const double finish = ranks_[static_cast<std::size_t>(fold_.representative(r))].finish_us;
    out.rank_finish_us.push_back(finish);
    out.time_us = std::max(out.time_us, finish);
  }
  for (std::size_t l = 0; l < topology_.num_links(); ++l) {
    const std::uint32_t c = fold_.class_of(l);
    if (c != Fold::kNone && classes_[c].bytes > 0) out.links.push_back({l, classes_[c].bytes, classes_[c].busy_us});
  }
  return out;
}

}  // namespace

std::optional<EventSimResult> sweep_without_contention(const coll::StepSource& source,
                                                       const topo::Topology& topology,
                                                       const EventSimOptions& options) {
  if (source.header().nranks < 1) return std::nullopt;
  if (source.header().nranks <= topology.num_ranks() && ranks_share_a_reducing_device(topology, source.header().nranks))
    return std::nullopt;
  for (const Symmetry symmetry : fold_symmetries(source)) {
    Sweep sweep(source, topology, options, symmetry);
    switch (sweep.run()) {
      case Outcome::done: return sweep.result();
      case Outcome::asymmetric: continue;  // try a longer period; the last one is no folding
      case Outcome::contention:
      case Outcome::malformed: return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace colltune::sim::detail
