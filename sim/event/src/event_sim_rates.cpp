// Max-min fair bandwidth sharing (progressive filling): the engine's side, the choice between
// the incremental solve (event_sim_solver.cpp) and the full one, and the full solve.
//
// Progressive filling over a set of flows:
//   1. every link offers its capacity equally to the flows on it whose rate is not yet fixed;
//   2. the link with the smallest such share, least (share, link) first, is the bottleneck of
//      all its unfixed flows: their rate is that share, and it is taken off every other link
//      they cross;
//   3. repeat until every flow has a rate.
// Only flows connected through shared links interact, so the full solve covers the connected
// components of the flow/link graph that hold a changed link (flows started or ended there). Its
// links are taken in order of (share, link index): the initial shares sorted once, plus a small
// heap of links whose share moved before their turn (a share is only recomputed when its link
// comes up), O((L + F*h) log L) at worst for L links, F flows of h hops. A component whose links
// carry one flow each needs no filling (each flow gets its path's least capacity, as the filling
// would give it), and neither does a new flow alone on its links; a component whose multiset of
// paths was solved before reuses that solution (event_sim_recall.cpp). Each pop is recorded
// (PopTime) with the link that fixed each flow: the incremental solve starts from them. Flows
// whose rate did not change keep their end event.
#include <algorithm>
#include <functional>
#include <limits>

#include "event_sim_engine.hpp"

namespace colltune::sim::detail {

void Engine::update_rates(double t) {
  if (new_flows_.empty() && dirty_links_.empty()) return;
  for (const RateSolver::Rate& r : solver_.solve(links_, flows_, new_flows_, dirty_links_)) set_rate(r.flow, r.rate, t);
  new_flows_.clear();
  dirty_links_.clear();
}

// A flow's rate changes at t: account the bytes sent at the old rate, reschedule its end.
void Engine::set_rate(std::uint32_t f, double rate, double t) {
  FlowState& fl = flows_[f];
  // Shares are positive in exact arithmetic; keep rounding from stalling a flow forever.
  rate = std::max(rate, 1e-9);
  // Its end event stands only when the rate is exactly the same, as in the reference engine (R3).
  // A rate that moved by a rounding error is re-accounted too: keeping the old one would move
  // the flow's end by that error, and where ends tie (reductions queued at one instant, in
  // order of receiving rank) a different order changes the run.
  if (fl.rate > 0 && rate == fl.rate) return;
  fl.left = std::max(0.0, fl.left - fl.rate * (t - fl.last_t));
  fl.last_t = t;
  fl.rate = rate;
  ++fl.version;
  queue_.push(Event{t + fl.left / rate, kFlowBit | f, fl.version});
}

const std::vector<RateSolver::Rate>& RateSolver::solve(std::vector<LinkState>& links,
                                                       std::vector<FlowState>& flows,
                                                       const std::vector<std::uint32_t>& added,
                                                       const std::vector<std::size_t>& dirty) {
  links_ = &links;
  flows_ = &flows;
  if (ls_.size() < links.size()) {
    ls_.resize(links.size());
    marks_.resize(links.size());
  }
  out_.clear();
  changed_.clear();
  shared_.clear();
  for (std::uint32_t f : added)
    if (flows[f].on_links && !solve_alone(f)) shared_.push_back(f);
  next_epoch();  // marks the changed links
  auto change = [&](std::size_t l) {
    if (tag(l).epoch == epoch_ || links[l].flows.empty()) return;
    tag(l).epoch = epoch_;
    changed_.push_back(static_cast<std::uint32_t>(l));
  };
  for (std::size_t l : dirty) change(l);
  for (std::uint32_t f : shared_)
    for (std::size_t l : flows[f].path->links) change(l);
  if (changed_.empty()) return out_;
  if (incremental_pays() && solve_incremental()) {
    ++counts_.incremental;
  } else {
    solve_full();
  }
  return out_;
}

// A new flow alone on its links (the common uncontended case) gets its path's least (capacity,
// link), which pops, at once (true); other new flows are marked new (by = kNone).
bool RateSolver::solve_alone(std::uint32_t f) {
  const std::vector<std::size_t>& path = (*flows_)[f].path->links;
  FlowSolve& fl = fs(f);
  fl.by = kNone;  // its slot may have held another flow
  for (std::size_t l : path)
    if ((*links_)[l].flows.size() != 1) return false;
  const std::uint32_t best = bottleneck(f);
  const double rate = (*links_)[best].capacity;
  for (std::size_t l : path) tag(l).pop = PopKind::kNever;
  tag(best).pop = PopKind::kAtCapacity;
  fl.rate = rate;
  fl.by = best;
  out_.push_back({f, rate});
  return true;
}

// The link of f's path with the least (capacity, link): the first to pop, alone on its links.
std::uint32_t RateSolver::bottleneck(std::uint32_t f) const {
  std::uint32_t best = kNone;
  double least = 0;
  for (std::size_t l : (*flows_)[f].path->links) {
    const double capacity = (*links_)[l].capacity;
    if (best == kNone || capacity < least || (capacity == least && l < best)) {
      best = static_cast<std::uint32_t>(l);
      least = capacity;
    }
  }
  return best;
}

// The incremental solve costs a few times more per link than the full one: it is tried when the
// changed links are few next to their component at its last full solve, and gives up past a
// budget (a fraction of that component). It never touches more than the component, so a stale
// estimate costs little. Where it keeps giving up, it is tried less and less often.
bool RateSolver::incremental_pays() {
  std::uint32_t component = 0;
  for (std::uint32_t l : changed_) component = std::max<std::uint32_t>(component, tag(l).component);
  budget_ = component / kBudgetDivisor;
  if (changed_.size() >= budget_) return false;
  if (skip_ == 0) return true;
  --skip_;
  return false;
}

PopTime RateSolver::pop(std::size_t l) const {
  const PopKind kind = tag(l).pop;
  if (kind == PopKind::kStored) return ls(l).stored;
  if (kind == PopKind::kNever) return PopTime{};
  return {(*links_)[l].capacity, static_cast<std::uint32_t>(l), 0};
}

// Epochs mark what a solve touched; on wrap-around, old marks are cleared.
void RateSolver::next_epoch() {
  if (++epoch_ != 0) return;
  for (LinkState& link : *links_) link.solve.epoch = 0;
  for (FlowState& flow : *flows_) flow.solve.epoch = 0;
  for (LinkMarks& m : marks_) m.watched = m.exploded = 0;
  epoch_ = 1;
}

// Flow f's rate is `rate`, fixed by link `by`; reported if it changed (or is new).
void RateSolver::settle(std::uint32_t f, double rate, std::uint32_t by) {
  FlowSolve& fl = fs(f);
  if (fl.by == kNone || fl.rate != rate) out_.push_back({f, rate});
  fl.rate = rate;
  fl.by = by;
}

// The incremental solve's result becomes the current solution.
void RateSolver::commit() {
  for (std::uint32_t l : touched_) set_pop(l, ls(l).new_time);
  for (std::uint32_t f : fixed_) settle(f, fs(f).new_rate, fs(f).new_by);
}

// The full solve writes the solution of its components in place.
void RateSolver::solve_full() {
  next_epoch();
  touched_.clear();
  fixed_.clear();
  if (!find_component()) {
    solve_unshared();
  } else if (recall()) {
    ++counts_.recalled;
  } else {
    fill_component();
    remember();
    ++counts_.filled;
  }
}

// The links and flows connected to the changed links, into touched_ and fixed_, one component
// after the other (each link's `component` is set). Whether some link carries several flows.
bool RateSolver::find_component() {
  const std::vector<LinkState>& links = *links_;
  bool shared = false;
  auto visit = [&](std::uint32_t l) {
    if (tag(l).epoch == epoch_) return;
    tag(l).epoch = epoch_;
    touched_.push_back(l);
    stack_.push_back(l);
    shared = shared || links[l].flows.size() > 1;
  };
  for (std::uint32_t root : changed_) {
    if (tag(root).epoch == epoch_) continue;
    const std::size_t first = touched_.size();
    stack_.clear();
    visit(root);
    while (!stack_.empty()) {
      const std::uint32_t l = stack_.back();
      stack_.pop_back();
      for (std::uint32_t f : links[l].flows) {
        FlowSolve& fl = fs(f);
        if (fl.epoch == epoch_) continue;
        fl.epoch = epoch_;
        fl.new_rate = -1;  // not fixed yet
        fixed_.push_back(f);
        for (std::size_t l2 : (*flows_)[f].path->links) visit(static_cast<std::uint32_t>(l2));
      }
    }
    const auto size = static_cast<std::uint16_t>(std::min<std::size_t>(touched_.size() - first, 0xffff));
    for (std::size_t i = first; i < touched_.size(); ++i) tag(touched_[i]).component = size;
  }
  return shared;
}

// No link carries two flows: each flow gets its path's least (capacity, link), which pops.
void RateSolver::solve_unshared() {
  for (std::uint32_t l : touched_) tag(l).pop = PopKind::kNever;
  for (std::uint32_t f : fixed_) {
    const std::uint32_t best = bottleneck(f);
    settle(f, (*links_)[best].capacity, best);
    tag(best).pop = PopKind::kAtCapacity;
  }
}

void RateSolver::fill_component() {
  // Shares only grow as flows are fixed (in exact arithmetic), so a link's heap key may lag
  // behind its share: a popped key that is out of date is pushed again with the current share,
  // and a share that fell below its key (rounding) is pushed at once. Every key stays a lower
  // bound of its link's share, so links pop in exactly the order of the eager scheme: least
  // (share, link) first.
  sorted_.clear();
  for (std::uint32_t l : touched_) {
    LinkSolve& s = ls(l);
    s.remaining = (*links_)[l].capacity;
    s.unfrozen = static_cast<std::uint32_t>((*links_)[l].flows.size());
    set_pop(l, PopTime{});  // until it pops
    ++s.version;
    s.key = s.remaining / s.unfrozen;
    sorted_.push_back({s.key, l, s.version});
  }
  // The initial keys in sorted order, and the keys pushed since in a heap: the next link is the
  // lesser of the two fronts.
  std::sort(sorted_.begin(), sorted_.end(), [](const Share& a, const Share& b) { return b > a; });
  shares_.clear();
  PopTime level{-std::numeric_limits<double>::infinity(), 0, 0};  // the last regular pop
  std::size_t next = 0;
  while (next < sorted_.size() || !shares_.empty()) {
    Share top;
    if (shares_.empty() || (next < sorted_.size() && shares_.front() > sorted_[next])) {
      top = sorted_[next++];
    } else {
      std::pop_heap(shares_.begin(), shares_.end(), std::greater<>());
      top = shares_.back();
      shares_.pop_back();
    }
    LinkSolve& s = ls(top.link);
    if (top.version != s.version || s.unfrozen == 0) continue;  // superseded
    const double share = s.remaining / s.unfrozen;
    if (share != top.share) {  // its share grew since: back in line with the current share
      s.key = share;
      push_share({share, top.link, ++s.version});
      continue;
    }
    fill_pop(top.link, share, level);
  }
}

// Link l is the bottleneck of its unfixed flows at `share`; `level` is the last regular pop.
void RateSolver::fill_pop(std::uint32_t l, double share, PopTime& level) {
  LinkSolve& s = ls(l);
  if (level.level < share || (level.level == share && level.root < l)) {
    level = {share, l, 0};
  } else {  // its share fell below the last one taken (rounding): part of that pop's cascade
    ++level.sub;
  }
  s.stored = level;
  ++s.version;
  s.unfrozen = 0;
  for (std::uint32_t f : (*links_)[l].flows) {
    FlowSolve& fl = fs(f);
    if (fl.new_rate >= 0) continue;
    fl.new_rate = share;
    settle(f, share, l);
    for (std::size_t l2 : (*flows_)[f].path->links) {
      LinkSolve& o = ls(l2);
      if (l2 == l || o.unfrozen == 0) continue;
      o.remaining = std::max(0.0, o.remaining - share);
      --o.unfrozen;
      if (o.unfrozen > 0) {
        const double now = o.remaining / o.unfrozen;
        if (now < o.key) {  // rounding made it smaller: its key must follow
          o.key = now;
          push_share({now, static_cast<std::uint32_t>(l2), ++o.version});
        }
      }
    }
  }
}

void RateSolver::push_share(const Share& e) {
  shares_.push_back(e);
  std::push_heap(shares_.begin(), shares_.end(), std::greater<>());
}

}  // namespace colltune::sim::detail
