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
// is contention, and the sweep gives up at once; simulate_steps then runs the event engine from
// the start. When the premise holds throughout, the results are the engine's, computed with the
// same expressions (tests compare both on every algorithm and several topologies), and `events`
// counts the engine's events: step starts, transfer starts and ends, reduction arrivals.
//
// Symmetry (event_sim_fold.hpp): the sweep runs ranks 0..d-1 only, d a rotation period of the
// schedule that the machine's routes share, and every transfer it resolves stands for its p/d
// rotated copies; links are tracked per orbit. A 4096-rank ring on a flat or fat-tree machine
// folds to one node's ranks. d = p is the plain sweep.
#include "event_sim_sweep.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "event_sim_engine.hpp"
#include "event_sim_fold.hpp"

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

struct PostedOp {
  std::size_t count = 0;  // elements
  bool reduce = false;    // a recv_reduce
};

// A channel src -> dst up to rotation: posted sends and receives not yet paired, oldest first,
// and what a transfer needs of the route.
struct SweepChannel {
  int src_rep = 0;                // the sending and receiving representatives
  int dst_rep = 0;
  FoldedRoute route;
  std::vector<PostedOp> sends;
  std::vector<PostedOp> recvs;
  std::size_t send_head = 0;
  std::size_t recv_head = 0;
};

struct Arrival {
  double t = 0;
  double bytes = 0;
};

// A representative rank's state. Channel lookups go through a one-entry cache per direction (a
// ring rank has one peer each way) before the tables.
struct SweepRank {
  std::size_t step = 0;
  std::size_t nsteps = 0;
  std::uint32_t unresolved = 0;   // ops of the current step not yet paired
  double step_end = 0;
  double reduce_free = 0;         // when the device's reduction queue is idle
  double gamma = 0;               // us per byte reduced
  int out_peer = -1;              // the last channel of sends from this rank, and its peer
  std::uint32_t out_chan = 0;
  int in_peer = -1;               // the last channel of receives at this rank, and its peer
  std::uint32_t in_chan = 0;
  std::vector<Arrival> reduces;   // blocks of this step waiting for the device, to order by arrival
  std::vector<std::pair<int, std::uint32_t>> out;  // peer -> channel of sends to it
  std::vector<std::pair<int, std::uint32_t>> in;   // peer -> channel of receives from it
  bool finished = false;
  double finish_us = 0;
};

// Step starts in time order: a radix heap over the bit patterns of the (non-negative) times,
// which order like the times themselves. Times never go below the last one popped, so a push
// lands in the bucket of the highest bit where it differs from that time (O(1)), and a pop
// refills the lowest buckets from the first non-empty one; each entry moves down at most 64
// times. Equal times share a bucket: a whole instant comes out in one pass.
class StepQueue {
 public:
  bool empty() const { return size_ == 0; }
  void push(double t, int rank) {
    const std::uint64_t key = bits(t);
    buckets_[bucket_of(key)].push_back({key, rank});
    ++size_;
  }
  // The ranks due at the earliest instant and that instant; call only when not empty.
  double pop_instant(std::vector<int>& out) {
    out.clear();
    if (buckets_[0].empty()) refill();
    for (const Due& d : buckets_[0]) out.push_back(d.rank);
    size_ -= buckets_[0].size();
    buckets_[0].clear();
    return std::bit_cast<double>(last_);
  }

 private:
  struct Due {
    std::uint64_t key;
    int rank;
  };
  static std::uint64_t bits(double t) { return std::bit_cast<std::uint64_t>(t + 0.0); }  // -0 -> +0
  std::size_t bucket_of(std::uint64_t key) const {
    return key == last_ ? 0 : 64 - static_cast<std::size_t>(std::countl_zero(key ^ last_));
  }
  // Moves the first non-empty bucket's entries down, relative to its least key.
  void refill() {
    std::size_t i = 1;
    while (buckets_[i].empty()) ++i;
    std::uint64_t least = buckets_[i].front().key;
    for (const Due& d : buckets_[i]) least = std::min(least, d.key);
    last_ = least;
    std::vector<Due> moving;
    moving.swap(buckets_[i]);
    for (const Due& d : moving) buckets_[bucket_of(d.key)].push_back(d);
    moving.clear();
    buckets_[i].swap(moving);  // keep the capacity
  }

  std::array<std::vector<Due>, 65> buckets_;
  std::uint64_t last_ = 0;
  std::size_t size_ = 0;
};

bool take(std::vector<PostedOp>& queue, std::size_t& head, PostedOp& op) {
  if (head == queue.size()) return false;
  op = queue[head++];
  if (head == queue.size()) {
    queue.clear();
    head = 0;
  }
  return true;
}

double gamma_of(const topo::Topology& topology, int rank) {
  const double gbps = topology.device(topology.device_of_rank(rank)).reduce_gbps;
  return gbps > 0 ? 1.0 / (gbps * 1e3) : 0.0;
}

class Sweep {
 public:
  Sweep(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options, int period);
  Outcome run();
  EventSimResult result() const;

 private:
  bool symmetric_ranks() const;
  Outcome enter_step(int rank, double t);
  Outcome post(int rank, const coll::Op& op, double t);
  std::optional<std::uint32_t> out_channel(int rep, int peer);
  std::optional<std::uint32_t> in_channel(int peer, int rep);
  std::optional<std::uint32_t> find_channel(int src, int dst);
  Outcome transfer(std::uint32_t chan, const PostedOp& send, const PostedOp& recv, double t);
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
  StepQueue queue_;
  std::vector<int> instant_;
  std::size_t events_ = 0;
  std::size_t flows_ = 0;
};

Sweep::Sweep(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options,
             int period)
    : source_(source), topology_(topology), options_(options), nranks_(source.header().nranks),
      fold_(topology, nranks_, period) {
  check_simulable(source, topology, options);
  ranks_.resize(static_cast<std::size_t>(period));
  for (int r = 0; r < period; ++r) {
    ranks_[static_cast<std::size_t>(r)].nsteps = source.num_steps(r);
    ranks_[static_cast<std::size_t>(r)].gamma = gamma_of(topology, r);
  }
}

// Every rank must look like its representative: as many steps, the same reduction rate.
bool Sweep::symmetric_ranks() const {
  for (int r = fold_.period(); r < nranks_; ++r) {
    const SweepRank& rep = ranks_[static_cast<std::size_t>(fold_.representative(r))];
    if (source_.num_steps(r) != rep.nsteps || gamma_of(topology_, r) != rep.gamma) return false;
  }
  return true;
}

Outcome Sweep::run() {
  if (!symmetric_ranks()) return Outcome::asymmetric;
  for (int r = 0; r < fold_.period(); ++r)
    if (Outcome o = enter_step(r, 0.0); o != Outcome::done) return o;
  while (!queue_.empty()) {
    const double t = queue_.pop_instant(instant_);
    for (int rank : instant_) {
      ++ranks_[static_cast<std::size_t>(rank)].step;
      if (Outcome o = enter_step(rank, t); o != Outcome::done) return o;
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
  const PostedOp me{op.block.count, op.kind == coll::OpKind::recv_reduce};
  PostedOp other;
  const bool send = op.kind == coll::OpKind::send;
  const std::optional<std::uint32_t> c = send ? out_channel(rank, op.peer) : in_channel(op.peer, rank);
  if (!c) return Outcome::asymmetric;
  SweepChannel& ch = channels_[*c];
  if (send) {
    if (!take(ch.recvs, ch.recv_head, other)) {
      ch.sends.push_back(me);
      return Outcome::done;
    }
    return transfer(*c, me, other, t);
  }
  if (!take(ch.sends, ch.send_head, other)) {
    ch.recvs.push_back(me);
    return Outcome::done;
  }
  return transfer(*c, other, me, t);
}

std::optional<std::uint32_t> Sweep::out_channel(int rep, int peer) {
  SweepRank& rs = ranks_[static_cast<std::size_t>(rep)];
  if (rs.out_peer == peer) return rs.out_chan;
  auto it = std::find_if(rs.out.begin(), rs.out.end(), [peer](const auto& e) { return e.first == peer; });
  std::optional<std::uint32_t> c = it != rs.out.end() ? std::optional(it->second) : find_channel(rep, peer);
  if (!c) return c;
  if (it == rs.out.end()) rs.out.emplace_back(peer, *c);
  rs.out_peer = peer;
  rs.out_chan = *c;
  return c;
}

std::optional<std::uint32_t> Sweep::in_channel(int peer, int rep) {
  SweepRank& rs = ranks_[static_cast<std::size_t>(rep)];
  if (rs.in_peer == peer) return rs.in_chan;
  auto it = std::find_if(rs.in.begin(), rs.in.end(), [peer](const auto& e) { return e.first == peer; });
  // The channel peer -> rep is the rotation of (peer's representative -> rep shifted alike).
  const int k = fold_.copies() - peer / fold_.period();
  std::optional<std::uint32_t> c =
      it != rs.in.end() ? std::optional(it->second) : find_channel(fold_.representative(peer), fold_.shift(rep, k));
  if (!c) return c;
  if (it == rs.in.end()) rs.in.emplace_back(peer, *c);
  rs.in_peer = peer;
  rs.in_chan = *c;
  return c;
}

// The channel src -> dst, src a representative: looked up, or created after checking that its
// copies' routes are its rotation (nullopt when they are not).
std::optional<std::uint32_t> Sweep::find_channel(int src, int dst) {
  const std::uint64_t key = static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(nranks_) +
                            static_cast<std::uint64_t>(dst);
  if (auto it = channel_ids_.find(key); it != channel_ids_.end()) return it->second;
  std::optional<FoldedRoute> route = fold_.add_channel(src, dst);
  if (!route) return std::nullopt;
  classes_.resize(fold_.num_classes());
  for (std::uint32_t cls : route->classes) classes_[cls].multiplicity = fold_.multiplicity(cls);
  const auto id = static_cast<std::uint32_t>(channels_.size());
  channels_.emplace_back();
  channels_.back().src_rep = src;
  channels_.back().dst_rep = fold_.representative(dst);
  channels_.back().route = std::move(*route);
  channel_ids_.emplace(key, id);
  return id;
}

// The transfer of a paired send and receive, starting now (t): fixed end, arrival, completions.
Outcome Sweep::transfer(std::uint32_t chan, const PostedOp& send, const PostedOp& recv, double t) {
  if (send.count != recv.count) return Outcome::malformed;
  const SweepChannel& ch = channels_[chan];
  const double bytes = static_cast<double>(send.count) * static_cast<double>(options_.elem_size);
  double end = t;
  if (bytes != 0 && !ch.route.classes.empty()) {
    for (std::uint32_t c : ch.route.classes) {
      const ClassState& cls = classes_[c];
      if (cls.multiplicity > 1 || t < cls.last_end || t == cls.last_start) return Outcome::contention;
    }
    end = t + bytes / ch.route.rate;
    for (std::uint32_t c : ch.route.classes) {
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
  const double arrival = end + ch.route.latency_us;
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
  queue_.push(rs.step_end, rank);
}

// The unfolded result: every rank as its representative, every link as its class.
EventSimResult Sweep::result() const {
  EventSimResult out;
  const auto copies = static_cast<std::size_t>(fold_.copies());
  out.fast_path_period = fold_.period();
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
  for (int period : fold_periods(source.header().nranks, source.rotation_period())) {
    Sweep sweep(source, topology, options, period);
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
