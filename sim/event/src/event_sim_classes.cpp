// The contention-free sweep over classes of identical ranks (event_sim_classes.hpp).
//
// When one rank starts late or one segment is one element larger than the others, a run has no
// symmetry left to fold, yet almost every rank still lives exactly the life of its neighbours.
// This sweep simulates one representative per class of ranks that provably behave the same, and
// splits a class only where its members diverge:
//  - ranks come in blocks of d (d: a rotation the schedule's structure declares,
//    StepSource::structure_period, and the machine's routes share, Fold); block j holds ranks
//    j d .. j d + d - 1;
//  - a class is a run of consecutive blocks whose ranks start the current step at the very same
//    times, block for block (bit for bit), and whose ops at this step are the same up to the
//    rotation: the source lists the ranks whose counts differ at each step
//    (StepSource::irregular_ranks), and their blocks are classes of their own for that step;
//  - a class's members must also have their peers in one class each (a rank's peer is its
//    representative's peer rotated): a class whose peers straddle two classes is split where they
//    do, until every class's peers align;
//  - then every class computes the step once, for its representative block, and adjacent classes
//    that come out of the step at the same times merge again.
// A run of p ranks whose asymmetry touches a few ranks at each step costs a few classes per step.
//
// What this needs of the run, checked as it goes (any failure gives up: simulate_schedule then
// takes the other paths, which give the same results):
//  - lockstep: every op at step s pairs with its peer's op at step s, one transfer per ordered
//    pair and step, every rank with as many steps;
//  - one channel per link: each link class (Fold's orbits, every link of it carrying one block's
//    copy) is crossed by one route only. A link then carries the transfers of one sender-receiver
//    pair one after another (each starts after the step holding the previous one ended, that is
//    after it arrived), so no link ever carries two transfers at once: the premise of the
//    contention-free sweep (event_sim_sweep.cpp), here guaranteed instead of watched;
//  - no two ranks reducing on one device (ranks_share_a_reducing_device).
// Under these rules a rank's step is a function of its start, its peers' starts and the
// transfers' sizes and routes: every transfer starts when the later of its two ranks starts the
// step, ends bytes / bottleneck later, arrives the path latency after that; the step ends when its
// last op completes, the reduced blocks reduced one after another in arrival order. These are
// event_sim_sweep.cpp's expressions on the same numbers, so the times are the sweep's and the
// event queue's bit for bit; a step's transfers are counted once, at their senders.
// Any start times (EventSimOptions::rank_start_us) are allowed: ranks that start together begin
// in one class.
#include "event_sim_classes.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "event_sim_engine.hpp"
#include "event_sim_fold.hpp"

namespace colltune::sim::detail {
namespace {

constexpr std::uint32_t kNoOwner = 0xffffffffu;

// An op with its peer as an offset from its rank, (peer - rank) mod p.
struct RelOp {
  coll::OpKind kind = coll::OpKind::send;
  int offset = 0;
  std::uint16_t channel = 0;
  std::size_t count = 0;
};

// Blocks [start, start + length) whose rank i starts the current step at t[i].
struct Run {
  int start = 0;
  int length = 0;
  std::vector<double> t;
  // A class of its own this step: its ops are its own ranks' (own[i]), not the template's.
  bool irregular = false;
  std::vector<std::vector<RelOp>> own;
};

// A transfer's route up to rotation: representative sender i to i + offset on one op channel.
struct Route {
  double rate = 0;
  double latency_us = 0;
  std::vector<std::uint32_t> classes;
};
using RouteKey = std::tuple<int, int, std::uint16_t>;  // (sender rank index, offset, op channel)

class ClassSweep {
 public:
  ClassSweep(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options, int period);
  enum class Outcome { done, asymmetric, refused };
  Outcome run();
  EventSimResult result() const;

 private:
  bool load_template(std::size_t step);
  void isolate(int block, std::size_t step);
  std::size_t run_of(int block) const;
  void split(std::size_t index, int members);
  void align();
  void cuts_of(const Run& run, std::vector<int>& cuts) const;
  Outcome advance(std::size_t step);
  Outcome rank_step(const Run& run, int i, double& t_new);
  const std::vector<RelOp>& ops_of(const Run& run, int i) const;
  const RelOp* partner(const Run& peer_run, int peer_index, const RelOp& op) const;
  const Route* route(int sender_index, int offset, std::uint16_t channel, Outcome& failure);
  void record(const Run& run, const Route& route, double bytes, double duration);
  void merge();
  int block_shift(int i, int offset) const { return ((i + offset) / period_) % blocks_; }
  int wrap(int block) const { return block % blocks_; }
  std::vector<RelOp> relative_ops(int rank, std::size_t step);

  const coll::StepSource& source_;
  const topo::Topology& topology_;
  EventSimOptions options_;
  int nranks_;
  int period_;
  int blocks_;
  std::size_t steps_ = 0;
  bool one_start_ = true;
  Fold fold_;
  std::vector<Run> runs_;  // by start, covering every block once, none wrapping past the last
  std::vector<std::vector<RelOp>> template_;  // this step's ops of every regular rank, by index
  std::vector<int> irregular_;
  std::vector<coll::Op> scratch_;
  std::vector<double> gamma_;  // by rank index (every block alike: ranks_rotate)
  std::map<RouteKey, Route> routes_;
  std::vector<RouteKey> class_owner_;
  std::vector<std::vector<double>> bytes_diff_;  // by class: per block, differences (prefix-summed at the end)
  std::vector<std::vector<double>> busy_diff_;
  std::size_t events_ = 0;
  std::size_t flows_ = 0;
  std::size_t max_runs_ = 0;
  std::vector<std::pair<double, double>> reduces_;  // scratch: (arrival, bytes)
};

ClassSweep::ClassSweep(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options,
                       int period)
    : source_(source), topology_(topology), options_(options), nranks_(source.header().nranks), period_(period),
      blocks_(nranks_ / period), fold_(topology, nranks_, Symmetry{Symmetry::Kind::rotation, period}) {
  for (int i = 0; i < period_; ++i) gamma_.push_back(rank_gamma(topology, i));
  one_start_ = std::all_of(options.rank_start_us.begin(), options.rank_start_us.end(), [](double t) { return t == 0; });
  // Ranks that start together begin in one class: consecutive blocks with the same start times.
  for (int b = 0; b < blocks_; ++b) {
    std::vector<double> t;
    for (int i = 0; i < period_; ++i) t.push_back(start_of(options_, b * period_ + i));
    if (!runs_.empty() && runs_.back().t == t) {
      ++runs_.back().length;
    } else {
      runs_.push_back(Run{b, 1, std::move(t), false, {}});
    }
  }
}

ClassSweep::Outcome ClassSweep::run() {
  steps_ = source_.num_steps(0);
  for (int r = 1; r < nranks_; ++r)
    if (source_.num_steps(r) != steps_) return Outcome::refused;
  for (std::size_t step = 0; step < steps_; ++step) {
    if (!load_template(step)) return Outcome::refused;
    align();
    // With every rank on time, the unfolded sweep is the alternative: past half the blocks in
    // classes of their own this sweep would be no faster. Late ranks' alternative, the event
    // queue, is slower than any number of classes.
    if (one_start_ && runs_.size() > static_cast<std::size_t>(std::max(blocks_ / 2, 8))) return Outcome::refused;
    max_runs_ = std::max(max_runs_, runs_.size());
    if (const Outcome o = advance(step); o != Outcome::done) return o;
    merge();
  }
  return Outcome::done;
}

// The ops of `rank` at `step`, peers as offsets; one op with offset -1 when they are not for
// this sweep (a peer out of range, or two sends to one peer, or two receives from one).
std::vector<RelOp> ClassSweep::relative_ops(int rank, std::size_t step) {
  std::vector<RelOp> out;
  for (const coll::Op& op : source_.ops(rank, step, scratch_)) {
    if (op.peer < 0 || op.peer >= nranks_ || op.peer == rank) return {RelOp{op.kind, -1, 0, 0}};
    const RelOp rel{op.kind, (op.peer - rank + nranks_) % nranks_, op.channel, op.block.count};
    for (const RelOp& o : out)
      if (o.offset == rel.offset && (o.kind == coll::OpKind::send) == (rel.kind == coll::OpKind::send))
        return {RelOp{op.kind, -1, 0, 0}};
    out.push_back(rel);
  }
  return out;
}

// This step's template (the ops of a block no irregular rank is in) and the irregular blocks
// isolated with their own ops. False for a malformed op (the engine reports it).
bool ClassSweep::load_template(std::size_t step) {
  source_.irregular_ranks(step, irregular_);
  std::vector<int> blocks;
  for (int r : irregular_) blocks.push_back(r / period_);
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  int regular = 0;
  for (int b : blocks)
    if (b == regular) ++regular;
  template_.clear();
  if (regular < blocks_)
    for (int i = 0; i < period_; ++i) template_.push_back(relative_ops(regular * period_ + i, step));
  for (int b : blocks) isolate(b, step);
  for (const auto& ops : template_)
    for (const RelOp& op : ops)
      if (op.offset < 0) return false;
  for (const Run& run : runs_)
    for (const auto& ops : run.own)
      for (const RelOp& op : ops)
        if (op.offset < 0) return false;
  return true;
}

std::size_t ClassSweep::run_of(int block) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), block, [](int b, const Run& r) { return b < r.start; });
  return static_cast<std::size_t>(it - runs_.begin()) - 1;
}

// runs_[index] keeps its first `members` blocks; the rest become the next run, in the same state.
void ClassSweep::split(std::size_t index, int members) {
  Run rest = runs_[index];
  rest.start += members;
  rest.length -= members;
  runs_[index].length = members;
  runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(index) + 1, std::move(rest));
}

// Makes `block` a class of its own for this step, with its ranks' own ops.
void ClassSweep::isolate(int block, std::size_t step) {
  std::size_t index = run_of(block);
  if (block > runs_[index].start) split(index, block - runs_[index].start), ++index;
  if (runs_[index].length > 1) split(index, 1);
  Run& run = runs_[index];
  run.irregular = true;
  run.own.clear();
  for (int i = 0; i < period_; ++i) run.own.push_back(relative_ops(block * period_ + i, step));
}

// Cuts every run where its members' peers change state, for any op. One pass: cutting a run
// changes no state, so cuts taken against the runs as they stand are final (and a peer in a run
// split off its neighbour, an isolated block, is in the same state as the neighbour).
void ClassSweep::align() {
  std::vector<Run> out;
  out.reserve(runs_.size());
  std::vector<int> cuts;
  for (const Run& run : runs_) {
    cuts_of(run, cuts);
    int from = 0;
    for (int cut : cuts) {
      Run piece = run;
      piece.start = run.start + from;
      piece.length = cut - from;
      out.push_back(std::move(piece));
      from = cut;
    }
    Run last = run;
    last.start = run.start + from;
    last.length = run.length - from;
    out.push_back(std::move(last));
  }
  runs_ = std::move(out);
}

// The members of `run` (positions 1..length-1) at which some op's peer is in another state than
// the previous member's, in order.
void ClassSweep::cuts_of(const Run& run, std::vector<int>& cuts) const {
  cuts.clear();
  if (run.length == 1) return;
  for (int i = 0; i < period_; ++i) {
    for (const RelOp& op : ops_of(run, i)) {
      int block = wrap(run.start + block_shift(i, op.offset));
      std::size_t index = run_of(block);
      const std::vector<double>* state = &runs_[index].t;
      for (int member = 0;;) {
        const Run& peers = runs_[index];
        member += peers.start + peers.length - block;  // the members whose peers are in `peers`
        if (member >= run.length) break;
        block = wrap(peers.start + peers.length);
        index = block == 0 ? 0 : index + 1;
        if (runs_[index].t != *state) {
          cuts.push_back(member);
          state = &runs_[index].t;
        }
      }
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
}

const std::vector<RelOp>& ClassSweep::ops_of(const Run& run, int i) const {
  return run.irregular ? run.own[static_cast<std::size_t>(i)] : template_[static_cast<std::size_t>(i)];
}

// The op of rank `peer_index` of `peer_run` that pairs with `op` (the complementary kind from
// the opposite offset, same channel and count), if it is the only op between the two.
const RelOp* ClassSweep::partner(const Run& peer_run, int peer_index, const RelOp& op) const {
  const int back = (nranks_ - op.offset) % nranks_;
  const RelOp* found = nullptr;
  for (const RelOp& o : ops_of(peer_run, peer_index)) {
    if (o.offset != back || (o.kind == coll::OpKind::send) == (op.kind == coll::OpKind::send)) continue;
    if (found) return nullptr;
    found = &o;
  }
  if (!found || found->channel != op.channel || found->count != op.count) return nullptr;
  return found;
}

// The route of representative rank i's sends to i + offset on `channel`, checked once: its copies
// are rotations (else `failure` = asymmetric), and every class it crosses is its own, crossed once,
// by one copy at a time (else refused).
const Route* ClassSweep::route(int sender_index, int offset, std::uint16_t channel, Outcome& failure) {
  const RouteKey key{sender_index, offset, channel};
  if (auto it = routes_.find(key); it != routes_.end()) return &it->second;
  const std::optional<FoldedRoute> folded = fold_.add_channel(sender_index, (sender_index + offset) % nranks_, channel);
  if (!folded) {
    failure = Outcome::asymmetric;
    return nullptr;
  }
  class_owner_.resize(fold_.num_classes(), RouteKey{-1, -1, 0});
  for (std::size_t h = 0; h < folded->classes.size(); ++h) {
    const std::uint32_t c = folded->classes[h];
    const bool twice = std::find(folded->classes.begin(), folded->classes.begin() + static_cast<std::ptrdiff_t>(h), c) !=
                       folded->classes.begin() + static_cast<std::ptrdiff_t>(h);
    if (fold_.multiplicity(c) != 1 || twice || (std::get<0>(class_owner_[c]) >= 0 && class_owner_[c] != key)) {
      failure = Outcome::refused;
      return nullptr;
    }
    class_owner_[c] = key;
  }
  return &routes_.emplace(key, Route{folded->rate, folded->latency_us, folded->classes}).first->second;
}

// A transfer of every block of `run` (sender side): its bytes and busy time on its links.
void ClassSweep::record(const Run& run, const Route& route, double bytes, double duration) {
  for (std::uint32_t c : route.classes) {
    if (bytes_diff_.size() <= c) {
      bytes_diff_.resize(c + 1);
      busy_diff_.resize(c + 1);
    }
    for (auto* diff : {&bytes_diff_[c], &busy_diff_[c]}) {
      if (diff->empty()) diff->assign(static_cast<std::size_t>(blocks_) + 1, 0.0);
      const double v = diff == &bytes_diff_[c] ? bytes : duration;
      (*diff)[static_cast<std::size_t>(run.start)] += v;
      (*diff)[static_cast<std::size_t>(run.start + run.length)] -= v;
    }
  }
}

// Rank i of `run`'s step: when it ends (event_sim_sweep.cpp's expressions).
ClassSweep::Outcome ClassSweep::rank_step(const Run& run, int i, double& t_new) {
  const std::vector<RelOp>& ops = ops_of(run, i);
  const double t = run.t[static_cast<std::size_t>(i)];
  t_new = t;
  if (ops.empty()) return Outcome::done;
  const auto copies = static_cast<std::size_t>(run.length);
  events_ += copies;  // the step's start
  reduces_.clear();
  for (const RelOp& op : ops) {
    const int peer_index = (i + op.offset) % period_;
    const Run& peer_run = runs_[run_of(wrap(run.start + block_shift(i, op.offset)))];
    if (!partner(peer_run, peer_index, op)) return Outcome::refused;  // not lockstep
    const bool send = op.kind == coll::OpKind::send;
    Outcome failure = Outcome::done;
    const Route* r = send ? route(i, op.offset, op.channel, failure)
                          : route(peer_index, (nranks_ - op.offset) % nranks_, op.channel, failure);
    if (!r) return failure;
    const double start = std::max(t, peer_run.t[static_cast<std::size_t>(peer_index)]);
    const double bytes = static_cast<double>(op.count) * static_cast<double>(options_.elem_size);
    const double end = bytes != 0 && !r->classes.empty() ? start + bytes / r->rate : start;
    const double arrival = end + r->latency_us;
    if (send) {
      events_ += 2 * copies;
      flows_ += copies;
      if (bytes != 0 && !r->classes.empty()) record(run, *r, bytes, end - start);
    }
    if (!send && op.kind == coll::OpKind::recv_reduce && gamma_[static_cast<std::size_t>(i)] > 0) {
      events_ += copies;  // its arrival at the reduction queue
      reduces_.emplace_back(arrival, bytes);
    } else {
      t_new = std::max(t_new, arrival);
    }
  }
  std::stable_sort(reduces_.begin(), reduces_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double reduce_free = t;  // the device is idle by the step's start: its earlier blocks ended earlier steps
  for (const auto& [arrival, bytes] : reduces_) {
    reduce_free = std::max(arrival, reduce_free) + bytes * gamma_[static_cast<std::size_t>(i)];
    t_new = std::max(t_new, reduce_free);
  }
  return Outcome::done;
}

// Every run's step, from the times at its start (peers read the old times).
ClassSweep::Outcome ClassSweep::advance(std::size_t /*step*/) {
  std::vector<std::vector<double>> next(runs_.size());
  for (std::size_t index = 0; index < runs_.size(); ++index) {
    next[index].resize(static_cast<std::size_t>(period_));
    for (int i = 0; i < period_; ++i)
      if (const Outcome o = rank_step(runs_[index], i, next[index][static_cast<std::size_t>(i)]); o != Outcome::done)
        return o;
  }
  for (std::size_t index = 0; index < runs_.size(); ++index) runs_[index].t = std::move(next[index]);
  return Outcome::done;
}

// Adjacent runs that start the next step at the same times become one class.
void ClassSweep::merge() {
  std::vector<Run> merged;
  merged.reserve(runs_.size());
  for (Run& run : runs_) {
    run.irregular = false;
    run.own.clear();
    if (!merged.empty() && merged.back().t == run.t) {
      merged.back().length += run.length;
    } else {
      merged.push_back(std::move(run));
    }
  }
  runs_ = std::move(merged);
}

EventSimResult ClassSweep::result() const {
  EventSimResult out;
  out.class_period = period_;
  out.max_classes = max_runs_;
  out.events = events_;
  out.flows = flows_;
  out.rank_finish_us.resize(static_cast<std::size_t>(nranks_));
  for (const Run& run : runs_)
    for (int b = run.start; b < run.start + run.length; ++b)
      for (int i = 0; i < period_; ++i) {
        const double finish = run.t[static_cast<std::size_t>(i)];
        out.rank_finish_us[static_cast<std::size_t>(b * period_ + i)] = finish;
        out.time_us = std::max(out.time_us, finish);
      }
  for (std::size_t c = 0; c < bytes_diff_.size(); ++c) {
    if (bytes_diff_[c].empty()) continue;
    double bytes = 0, busy = 0;
    for (int b = 0; b < blocks_; ++b) {
      bytes += bytes_diff_[c][static_cast<std::size_t>(b)];
      busy += busy_diff_[c][static_cast<std::size_t>(b)];
      if (bytes > 0) out.links.push_back({fold_.orbit_link(static_cast<std::uint32_t>(c), b), bytes, busy});
    }
  }
  std::sort(out.links.begin(), out.links.end(), [](const LinkUsage& a, const LinkUsage& b) { return a.link < b.link; });
  return out;
}

// The block sizes worth trying: the source's structural period and its multiples dividing p,
// below p (one block of every rank saves nothing).
std::vector<int> class_periods(const coll::StepSource& source) {
  const int p = source.header().nranks;
  std::vector<int> out;
  const int d0 = source.structure_period();
  if (d0 <= 0) return out;
  for (int d = d0; d < p; d += d0)
    if (p % d == 0) out.push_back(d);
  return out;
}

}  // namespace

std::optional<EventSimResult> sweep_by_classes(const coll::StepSource& source, const topo::Topology& topology,
                                               const EventSimOptions& options) {
  check_simulable(source, topology, options);
  const int n = source.header().nranks;
  if (n < 2 || ranks_share_a_reducing_device(topology, n)) return std::nullopt;
  for (int period : class_periods(source)) {
    if (!ranks_rotate(source, topology, period)) continue;
    ClassSweep sweep(source, topology, options, period);
    switch (sweep.run()) {
      case ClassSweep::Outcome::done: return sweep.result();
      case ClassSweep::Outcome::asymmetric: continue;  // the machine breaks this period: a longer one
      case ClassSweep::Outcome::refused: return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace colltune::sim::detail
