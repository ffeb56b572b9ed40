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
//  - a class's members must also see their peers in one state (a rank's peer is its
//    representative's peer rotated): a class is cut where its members' peers change state;
//  - then every class computes the step once, for its first block, and adjacent classes that
//    come out of the step at the same times merge again.
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
//
// Affine mode. Where asymmetry spreads as a staircase (on a machine without slack, flat:, a
// larger segment delays each rank it passes by a little more than the last), ranks are not equal
// but shifted: block b at time t + b delta. When exact classes grow past max(32, blocks / 64),
// the sweep starts over in affine mode, where a class is a run of blocks whose times step by a
// constant delta, and members compute nothing: their times are the first block's plus their
// offset times delta. Such a class evolves as one exactly when its members' peers step by the
// same delta (max and + commute with a shift); classes merge when the next one continues the
// previous one's steps to within 2e-15 of the times (a few units in the last place: the
// continuation is computed along other operations than the neighbour's own times), and it then
// takes the continued times. Times in affine mode are the event queue's to rounding, not bit for
// bit (tested to 1e-9 of the run, as every fast path). A staircase whose steps repeat every few
// ranks is affine only in blocks that hold a whole period of it: when affine classes grow past
// the same bound, the sweep starts over with longer blocks (the next multiple of d dividing p).
#include "event_sim_classes.hpp"

#include <algorithm>
#include <cmath>

#include "event_sim_engine.hpp"

namespace colltune::sim::detail {
namespace {

// Merging in affine mode: the rounding a time carries (a few units in the last place, as a time
// computed along other operations than its neighbour's), to which two times are the same.
constexpr double kRounding = 8 * 0x1p-52;

double rounding(double x, double y) { return kRounding * std::max(std::abs(x), std::abs(y)); }

}  // namespace

ClassSweep::ClassSweep(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options,
                       int period, bool affine)
    : source_(source), topology_(topology), options_(options), nranks_(source.header().nranks), period_(period),
      blocks_(nranks_ / period), affine_(affine), fold_(topology, nranks_, Symmetry{Symmetry::Kind::rotation, period}) {
  for (int i = 0; i < period_; ++i) gamma_.push_back(rank_gamma(topology, i));
  one_start_ = std::all_of(options.rank_start_us.begin(), options.rank_start_us.end(), [](double t) { return t == 0; });
  route_cache_.resize(static_cast<std::size_t>(period_));
  start_classes();
}

// Ranks that start together begin in one class: consecutive blocks with the same start times.
void ClassSweep::start_classes() {
  for (int b = 0; b < blocks_; ++b) {
    const std::size_t at = states_.size();
    for (int i = 0; i < period_; ++i) states_.push_back(start_of(options_, b * period_ + i));
    if (!runs_.empty() && std::equal(states_.begin() + static_cast<std::ptrdiff_t>(at), states_.end(), base(runs_.back()))) {
      states_.resize(at);
      ++runs_.back().length;
      continue;
    }
    runs_.push_back(ClassRun{b, 1, static_cast<std::uint32_t>(at / static_cast<std::size_t>(period_)), b, 0.0, -1});
  }
}

ClassSweep::Outcome ClassSweep::run() {
  const std::size_t steps = source_.num_steps(0);
  for (int r = 1; r < nranks_; ++r)
    if (source_.num_steps(r) != steps) return Outcome::refused;
  for (std::size_t step = 0; step < steps; ++step) {
    if (!load_template(step)) return Outcome::refused;
    align();
    if (too_many_classes()) return affine_ ? Outcome::crowded : Outcome::affine;
    max_runs_ = std::max(max_runs_, runs_.size());
    if (const Outcome o = advance(); o != Outcome::done) return o;
    merge();
  }
  return Outcome::done;
}

// Classes past max(32, blocks / 64): exact ones start over in affine mode, affine ones with
// longer blocks (a staircase whose steps repeat every few ranks is affine only in blocks that
// hold a whole period of it). Classes that keep to a few dozen are what makes this sweep pay; a
// count that grows with the steps is what it cannot follow, and is caught early this way.
bool ClassSweep::too_many_classes() const {
  return runs_.size() > static_cast<std::size_t>(std::max(32, blocks_ / 64));
}

// The ops of `rank` at `step`, peers as offsets; false when they are not for this sweep (a peer
// out of range, two sends to one peer or two receives from one).
bool ClassSweep::relative_ops(int rank, std::size_t step, std::vector<RelOp>& out) {
  out.clear();
  for (const coll::Op& op : source_.ops(rank, step, scratch_)) {
    if (op.peer < 0 || op.peer >= nranks_ || op.peer == rank) return false;
    const RelOp rel{op.kind, (op.peer - rank + nranks_) % nranks_, op.channel, op.block.count};
    for (const RelOp& o : out)
      if (o.offset == rel.offset && (o.kind == coll::OpKind::send) == (rel.kind == coll::OpKind::send)) return false;
    out.push_back(rel);
  }
  return true;
}

// This step's template (the ops of a block no irregular rank is in) and the irregular blocks
// isolated with their own ops. False when some rank's ops are not for this sweep.
bool ClassSweep::load_template(std::size_t step) {
  source_.irregular_ranks(step, irregular_);
  for (int& r : irregular_) r /= period_;
  std::sort(irregular_.begin(), irregular_.end());
  irregular_.erase(std::unique(irregular_.begin(), irregular_.end()), irregular_.end());
  int regular = 0;
  for (int b : irregular_)
    if (b == regular) ++regular;
  template_.resize(static_cast<std::size_t>(period_));
  if (regular < blocks_)
    for (int i = 0; i < period_; ++i)
      if (!relative_ops(regular * period_ + i, step, template_[static_cast<std::size_t>(i)])) return false;
  own_used_ = 0;
  for (int b : irregular_) {
    isolate(b, step);
    for (int i = 0; i < period_; ++i)
      if (!relative_ops(b * period_ + i, step, own_ops_[(own_used_ - 1) * static_cast<std::size_t>(period_) + static_cast<std::size_t>(i)]))
        return false;
  }
  return true;
}

std::size_t ClassSweep::run_of(int block) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), block, [](int b, const ClassRun& r) { return b < r.start; });
  return static_cast<std::size_t>(it - runs_.begin()) - 1;
}

// runs_[index] keeps its first `members` blocks; the rest become the next class, in the same
// state (the same base: its continuation).
void ClassSweep::split(std::size_t index, int members) {
  ClassRun rest = runs_[index];
  rest.start += members;
  rest.length -= members;
  runs_[index].length = members;
  runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(index) + 1, rest);
}

// Makes `block` a class of its own for this step, its ops read next by load_template.
void ClassSweep::isolate(int block, std::size_t /*step*/) {
  std::size_t index = run_of(block);
  if (block > runs_[index].start) split(index, block - runs_[index].start), ++index;
  if (runs_[index].length > 1) split(index, 1);
  const std::size_t need = (own_used_ + 1) * static_cast<std::size_t>(period_);
  if (own_ops_.size() < need) own_ops_.resize(need);
  runs_[index].own = static_cast<std::int32_t>(own_used_++);
}

// Cuts every class where its members' peers change state, for any op. One pass: cutting a class
// changes no state, so cuts taken against the classes as they stand are final (an isolated block
// is its old class's continuation).
void ClassSweep::align() {
  scratch_runs_.clear();
  for (const ClassRun& run : runs_) {
    cuts_of(run, cuts_);
    int from = 0;
    cuts_.push_back(run.length);
    for (int cut : cuts_) {
      ClassRun piece = run;
      piece.start = run.start + from;
      piece.length = cut - from;
      scratch_runs_.push_back(piece);
      from = cut;
    }
  }
  std::swap(runs_, scratch_runs_);
}

// The members of `run` (positions 1..length-1) at which some op's peer is not the previous
// member's peer's continuation, in order.
void ClassSweep::cuts_of(const ClassRun& run, std::vector<int>& cuts) const {
  cuts.clear();
  if (run.length == 1) return;
  for (int i = 0; i < period_; ++i) {
    for (const RelOp& op : ops_of(run, i)) {
      int block = wrap(run.start + block_shift(i, op.offset));
      std::size_t index = run_of(block);
      for (int member = 0;;) {
        const ClassRun& peers = runs_[index];
        const int span = peers.start + peers.length - block;  // the members whose peers are in `peers`
        if (!same_step(run, peers, std::min(span, run.length - member)))  // peers drift against them: each its own class
          for (int m = member + 1; m < std::min(member + span, run.length); ++m) cuts.push_back(m);
        member += span;
        if (member >= run.length) break;
        block = wrap(peers.start + peers.length);
        const std::size_t next = block == 0 ? 0 : index + 1;
        if (!continues(peers, runs_[next])) cuts.push_back(member);
        index = next;
      }
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
}

// Whether class b's first block is in the state class a's blocks, continued one block past its
// last, would be in (bit for bit: pieces of one class are; others were not merged).
bool ClassSweep::continues(const ClassRun& a, const ClassRun& b) const {
  if (b.length > 1 && !same_step(a, b, b.length)) return false;
  const int next = a.start + a.length;  // past the last block, even where b wraps to block 0
  for (int i = 0; i < period_; ++i)
    if (base(a)[i] + (next - a.base_start) * a.delta != base(b)[i] + (b.start - b.base_start) * b.delta) return false;
  return true;
}

// Adjacent classes whose times continue each other become one (advance has based every class at
// its first block).
void ClassSweep::merge() {
  scratch_runs_.clear();
  for (ClassRun& run : runs_) {
    run.own = -1;
    double delta = 0, slack = 0;
    if (!scratch_runs_.empty() && mergeable(scratch_runs_.back(), run, delta, slack)) {
      scratch_runs_.back().delta = delta;
      scratch_runs_.back().slack = slack;
      scratch_runs_.back().length += run.length;
    } else {
      scratch_runs_.push_back(run);
    }
  }
  std::swap(runs_, scratch_runs_);
}

// Exact mode: the same times, block for block. Affine mode: b's first block at a's times
// continued by a's step (a single block takes b's offset as its step), to the rounding the times
// and the step's estimate carry, and b stepping alike; `delta` and `slack` are the merged class's
// step and its uncertainty, re-estimated over its first and its new block (a longer base, a
// sharper step).
bool ClassSweep::mergeable(const ClassRun& a, const ClassRun& b, double& delta, double& slack) const {
  const double* ta = base(a);
  const double* tb = base(b);
  if (!affine_) {
    delta = slack = 0;
    return std::equal(ta, ta + period_, tb);
  }
  const double a_delta = a.length == 1 ? tb[0] - ta[0] : a.delta;
  const double a_slack = a.length == 1 ? 2 * rounding(ta[0], tb[0]) : a.slack;
  for (int i = 0; i < period_; ++i) {
    const double continued = ta[i] + a.length * a_delta;
    if (std::abs(continued - tb[i]) > rounding(continued, tb[i]) + a.length * a_slack) return false;
  }
  delta = (tb[0] - ta[0]) / a.length;
  slack = std::min(a_slack, 2 * rounding(ta[0], tb[0]) / a.length);
  if (b.length == 1) return true;
  return std::abs(b.delta - delta) * (a.length + b.length) <= rounding(ta[0], tb[0]) + (a.length + b.length) * (b.slack + slack);
}

// Whether classes a and b step alike over `span` blocks: the same delta, or (affine mode)
// deltas whose difference over the span stays within what their estimates and the times carry.
bool ClassSweep::same_step(const ClassRun& a, const ClassRun& b, int span) const {
  if (a.delta == b.delta || span <= 1) return true;
  if (!affine_) return false;
  const double t = base(a)[0];
  return std::abs(a.delta - b.delta) * span <= rounding(t, t) + span * (a.slack + b.slack);
}

EventSimResult ClassSweep::result() const {
  EventSimResult out;
  out.class_period = period_;
  out.max_classes = max_runs_;
  out.events = events_;
  out.flows = flows_;
  out.rank_finish_us.resize(static_cast<std::size_t>(nranks_));
  for (const ClassRun& run : runs_)
    for (int b = run.start; b < run.start + run.length; ++b)
      for (int i = 0; i < period_; ++i) {
        const double finish = time_of(run, b, i);
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

namespace {

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
    for (bool affine : {false, true}) {
      ClassSweep sweep(source, topology, options, period, affine);
      switch (sweep.run()) {
        case ClassSweep::Outcome::done: return sweep.result();
        case ClassSweep::Outcome::affine: continue;  // too many exact classes: affine ones
        case ClassSweep::Outcome::asymmetric:         // the machine breaks this period, or
        case ClassSweep::Outcome::crowded: break;     // too many classes of it: a longer one
        case ClassSweep::Outcome::refused: return std::nullopt;
      }
      break;
    }
  }
  return std::nullopt;
}

}  // namespace colltune::sim::detail
