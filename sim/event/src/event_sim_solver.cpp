// Incremental max-min: progressive filling replayed only where a change can reach it, with the
// very arithmetic of the full solve, so that every rate is the full solve's, bit for bit.
//
// The full solve (event_sim_rates.cpp) is a sequence of pops: the link with the least (share,
// link) fixes its unfixed flows at its share, which is taken off the other links they cross.
// Its order is that of PopTime (event_sim_solver.hpp): regular pops in increasing (share, link);
// a link whose share rounding pushed below the last regular pop is taken right after it, in that
// pop's "cascade". What a link's pop gives (its time, its share, the flows it fixes) depends only
// on its own history: its capacity and flows, the shares taken off it and their order, and which
// of its flows are still unfixed when it pops. Pops of links that share no flow commute. The
// current solution records each link's PopTime and, for each flow, its rate and the link that
// fixed it ("by").
//
// When flows start or end, the links whose flows changed have a new history. The replay takes
// events in PopTime order and keeps two kinds of links:
//   - explicit links are replayed as the full solve would: their remaining capacity and unfixed
//     count are rebuilt, when they become explicit, from the shares taken off them so far sorted
//     by PopTime (the full solve's order of subtraction), then updated pop by pop; they pop at
//     least (share, link), stale keys going back in line exactly as in the full solve;
//   - every other link is "clean": its history so far is the recorded one, so its recorded pop,
//     the flows it fixes and their rate stand. A clean pop that fixes a flow of an explicit link
//     is replayed ("watch" event) to take that share off the explicit link at its recorded time.
// A clean link becomes explicit at the first event at which its history may differ:
//   - an explicit pop fixes one of its flows, unless that pop is the very one that fixed the flow
//     before (same link, same regular PopTime, hence the same share and the same place in order);
//   - the recorded pop of an explicit link comes ("ghost" event) while that link has not popped:
//     the flows it fixed then are not fixed now, and their other links become explicit then.
// Induction on events in PopTime order: every explicit link's state equals the full solve's at
// the same point, and clean links pop as recorded; hence each pop, and the solution, is the full
// solve's. When rounding pushes an explicit link's share below the current pop, the full solve
// takes it in that pop's cascade, by least (share, link) among the links that fell: the replay
// makes every recorded member of that cascade still to come explicit and replays the cascade
// (its members are numbered after the pops already taken, which keeps the order of PopTimes).
//
// The replay stops, and the components of the changed links are solved in full, when it touches
// more links than its budget (it would cost more than the full solve), or in cases it does not
// model (a share falling into a cascade at a ghost's time, where no pop happens) or that cannot
// arise (checked anyway: the full solve is always a correct answer).
#include <algorithm>
#include <functional>
#include <limits>

#include "event_sim_engine.hpp"

namespace colltune::sim::detail {
namespace {

// Whether a link with `share` would be taken before the pop at `t` (a rounding cascade).
bool below(double share, std::uint32_t link, const PopTime& t) {
  return share < t.level || (share == t.level && link < t.root);
}

}  // namespace

// The changed links are explicit from the start; events are taken until none is left.
bool RateSolver::solve_incremental() {
  next_epoch();
  failed_ = false;
  touched_.clear();
  fixed_.clear();
  heap_.clear();
  cascade_.clear();
  cascade_queued_ = false;
  const PopTime start{-std::numeric_limits<double>::infinity(), 0, 0};
  for (std::uint32_t l : changed_)
    if (!is_explicit(l)) make_explicit(l, start);
  while (!heap_.empty() && !failed_) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const Entry e = heap_.back();
    heap_.pop_back();
    ++event_;
    switch (static_cast<Kind>(e.order & 3)) {
      case kPop: pop_link(e); break;
      case kGhost:
        in_ghost_ = true;
        ghost(e.link);
        in_ghost_ = false;
        break;
      case kWatch: watched_pop(e.link); break;
    }
  }
  if (failed_) {
    backoff_ = std::min(2 * backoff_ + 1, kMaxBackoff);
    skip_ = backoff_;
    return false;
  }
  backoff_ /= 2;
  commit();
  return true;
}

// Whether flow f was fixed before `now` by a link that is not replayed (its recorded pop), or is
// fixed by the recorded pop being replayed now (all its flows at once, as in the full solve).
bool RateSolver::fixed_before(std::uint32_t f, const PopTime& now) const {
  const std::uint32_t by = fs(f).by;
  return by != kNone && !is_explicit(by) && (pop(by) < now || by == clean_pop_);
}

// From `now` on, link l is replayed: its state at `now` is rebuilt from the shares taken off it
// so far, in the order they were taken; the recorded pops still to come that fix its flows are
// watched.
void RateSolver::make_explicit(std::uint32_t l, const PopTime& now) {
  if (failed_) return;
  LinkSolve& s = ls(l);
  const PopTime recorded = pop(l);
  if (recorded.level != std::numeric_limits<double>::infinity() && !(now < recorded)) {
    failed_ = true;  // its recorded pop is past (it cannot have popped as recorded): cannot happen
    return;
  }
  tag(l).epoch = epoch_;
  s.new_time = PopTime{};
  marks_[l].made = event_;
  touched_.push_back(l);
  if (touched_.size() > budget_) failed_ = true;  // not worth it: give up
  subs_.clear();
  std::uint32_t unfrozen = 0;
  for (std::uint32_t f : (*links_)[l].flows) {
    const FlowSolve& fl = fs(f);
    if (is_fixed(f)) {
      subs_.push_back({ls(fl.new_by).new_time, fl.new_rate});
    } else if (fixed_before(f, now)) {
      subs_.push_back({pop(fl.by), fl.rate});
    } else {
      ++unfrozen;
      if (fl.by != kNone && fl.by != l && !is_explicit(fl.by) && marks_[fl.by].watched != epoch_) {
        marks_[fl.by].watched = epoch_;  // its recorded pop will take a share off l
        push(pop(fl.by), kWatch, fl.by, 0);
      }
    }
  }
  std::sort(subs_.begin(), subs_.end(), [](const Sub& a, const Sub& b) { return a.t < b.t; });
  double remaining = (*links_)[l].capacity;
  for (const Sub& sub : subs_) remaining = std::max(0.0, remaining - sub.rate);
  s.remaining = remaining;
  s.unfrozen = unfrozen;
  s.ghost_queued = false;
  if (unfrozen > 0) {
    queue(l, remaining / unfrozen, now);
  } else {
    queue_ghost(l, PopTime{}, now);
  }
}

// An explicit link's turn: it pops if its key is its share, else it goes back in line.
void RateSolver::pop_link(const Entry& e) {
  if (((e.order >> 2) & kCascade) == kCascade) {
    pop_cascade();
    return;
  }
  LinkSolve& s = ls(e.link);
  if (e.version != s.version || s.unfrozen == 0) return;  // superseded
  const double share = s.remaining / s.unfrozen;
  if (share != e.level) {  // its share grew since: back in line
    queue(e.link, share, {e.level, e.link, 0});
    return;
  }
  pop_at(e.link, {share, e.link, 0}, share);
}

// The next pop of the cascade being replayed: its least (share, link).
void RateSolver::pop_cascade() {
  cascade_queued_ = false;
  while (!cascade_.empty()) {
    std::pop_heap(cascade_.begin(), cascade_.end(), std::greater<>());
    const Share c = cascade_.back();
    cascade_.pop_back();
    LinkSolve& s = ls(c.link);
    if (c.version != s.version || s.unfrozen == 0) continue;  // superseded
    const double share = s.remaining / s.unfrozen;
    if (share != c.share) {  // its share grew since: back in line
      queue(c.link, share, cascade_at_);
      continue;
    }
    PopTime now = cascade_at_;
    now.sub = ++marks_[now.root].cascade_next;
    pop_at(c.link, now, share);
    break;
  }
  if (!cascade_.empty() && !cascade_queued_) {
    cascade_queued_ = true;
    push(cascade_at_, kPop, cascade_at_.root, 0);
  }
}

// Explicit link l pops at `now`.
void RateSolver::pop_at(std::uint32_t l, const PopTime& now, double share) {
  LinkSolve& s = ls(l);
  ++s.version;
  s.unfrozen = 0;
  s.new_time = now;
  fix_flows(l, now, share);
}

// Explicit link l's live entry: a regular pop at (share, l), or a cascade pop when its share is
// below the pop at `now`.
void RateSolver::queue(std::uint32_t l, double share, const PopTime& now) {
  if (below(share, l, now)) {
    join_cascade(l, share, now);
    return;
  }
  LinkSolve& s = ls(l);
  s.key = share;
  s.in_cascade = false;
  push({share, l, 0}, kPop, l, ++s.version);
  queue_ghost(l, {share, l, 0}, now);
}

// The recorded pop of explicit link l comes before its pop now expected at `expected`: it is
// queued as a ghost event. (Once l has popped at or before its recorded pop, that event would
// find every flow it fixed either fixed the same way or with its other links explicit already.)
void RateSolver::queue_ghost(std::uint32_t l, const PopTime& expected, const PopTime& now) {
  LinkSolve& s = ls(l);
  const PopTime old = pop(l);
  if (s.ghost_queued || old.level == std::numeric_limits<double>::infinity() || !(old < expected)) return;
  if (old < now) {
    failed_ = true;  // its recorded pop is past: cannot happen
    return;
  }
  s.ghost_queued = true;
  push(old, kGhost, l, 0);
}

// Link l pops at `now`: its unfixed flows get `share`, taken off their other links.
void RateSolver::fix_flows(std::uint32_t l, const PopTime& now, double share) {
  for (std::uint32_t f : (*links_)[l].flows) {
    FlowSolve& fl = fs(f);
    if (is_fixed(f) || fixed_before(f, now)) continue;
    fl.epoch = epoch_;
    fl.new_rate = share;
    fl.new_by = l;
    fixed_.push_back(f);
    // As recorded (a regular pop at the same time: the same share): other histories stand.
    const bool same = fl.by == l && now.sub == 0 && pop(l) == now;
    for (std::size_t l2 : (*flows_)[f].path->links) {
      const auto o = static_cast<std::uint32_t>(l2);
      if (o == l) continue;
      if (is_explicit(o)) {
        if (ls(o).unfrozen > 0) take(o, share, now);
      } else if (!same) {
        make_explicit(o, now);
      }
    }
  }
}

// A pop at `now` takes `share` off explicit link l (one of its flows is fixed).
void RateSolver::take(std::uint32_t l, double share, const PopTime& now) {
  LinkSolve& s = ls(l);
  s.remaining = std::max(0.0, s.remaining - share);
  if (--s.unfrozen == 0) return;
  const double current = s.remaining / s.unfrozen;
  // A key only has to stay a lower bound of the share: it follows when rounding made the share
  // smaller, or when the share fell below the pop at `now` (the link joins its cascade).
  if (current < s.key || (below(current, l, now) && !s.in_cascade)) queue(l, current, now);
}

// Link l's share fell below the pop at `now` (rounding): the full solve takes it next, in that
// pop's cascade, where links are taken by least (share, link). The whole cascade is replayed.
void RateSolver::join_cascade(std::uint32_t l, double share, const PopTime& now) {
  if (in_ghost_) {  // no pop happens at a ghost's time: not covered
    failed_ = true;
    return;
  }
  if (marks_[now.root].exploded != epoch_) {
    cascade_.clear();  // what is left of the last cascade is superseded
    cascade_at_ = {now.level, now.root, kCascade};
    explode(now);
  } else if (cascade_at_.level != now.level || cascade_at_.root != now.root) {
    failed_ = true;  // not the cascade being replayed: cannot happen
    return;
  }
  queue_ghost(l, cascade_at_, now);  // its pop in the cascade may come after the recorded one
  LinkSolve& s = ls(l);
  s.key = share;
  s.in_cascade = true;
  cascade_.push_back({share, l, ++s.version});
  std::push_heap(cascade_.begin(), cascade_.end(), std::greater<>());
  if (!cascade_queued_) {
    cascade_queued_ = true;
    push(cascade_at_, kPop, cascade_at_.root, 0);
  }
}

// Replays the cascade of the pop at `now` from now on: its recorded pops still to come are made
// explicit (they are found from its root through the flows they share).
void RateSolver::explode(const PopTime& now) {
  marks_[now.root].exploded = epoch_;
  marks_[now.root].cascade_next = now.sub;
  ++seen_;
  marks_[now.root].seen = seen_;
  std::vector<std::uint32_t>& stack = stack_;
  stack.assign(1, now.root);
  while (!stack.empty()) {
    const std::uint32_t l = stack.back();
    stack.pop_back();
    for (std::uint32_t f : (*links_)[l].flows)
      for (std::size_t l2 : (*flows_)[f].path->links) {
        LinkMarks& o = marks_[l2];
        const PopTime t = pop(l2);
        if (o.seen == seen_ || t.level != now.level || t.root != now.root || t.sub == 0) continue;
        o.seen = seen_;
        stack.push_back(static_cast<std::uint32_t>(l2));
        if (!is_explicit(static_cast<std::uint32_t>(l2)) && now.sub < t.sub)
          make_explicit(static_cast<std::uint32_t>(l2), now);
      }
  }
}

// The recorded pop of explicit link l: the flows it fixed then and does not fix now the same
// way change the histories of their other links from now on.
void RateSolver::ghost(std::uint32_t l) {
  const PopTime old = pop(l);
  for (std::uint32_t f : (*links_)[l].flows) {
    const FlowSolve& fl = fs(f);
    if (fl.by != l) continue;
    if (old.sub == 0 && is_fixed(f) && fl.new_by == l && ls(l).new_time == old) continue;
    for (std::size_t l2 : (*flows_)[f].path->links) {
      const auto o = static_cast<std::uint32_t>(l2);
      if (o != l && !is_explicit(o)) make_explicit(o, old);
    }
  }
}

// The recorded pop of link l, not replayed itself, fixes flows of explicit links. A link made
// explicit meanwhile (its share falls into a cascade) counts all of them at once.
void RateSolver::watched_pop(std::uint32_t l) {
  if (is_explicit(l)) return;  // replayed since: its own pops count
  const PopTime now = pop(l);
  clean_pop_ = l;
  for (std::uint32_t f : (*links_)[l].flows) {
    const FlowSolve& fl = fs(f);
    if (fl.by != l) continue;
    if (is_fixed(f)) {  // fixing it would have made l explicit: the replay is inconsistent
      failed_ = true;
      break;
    }
    for (std::size_t l2 : (*flows_)[f].path->links) {
      const auto o = static_cast<std::uint32_t>(l2);
      if (o != l && is_explicit(o) && marks_[o].made != event_ && ls(o).unfrozen > 0) take(o, fl.rate, now);
    }
  }
  clean_pop_ = kNone;
}

// An event at PopTime t (at equal times: pops, then ghosts, then watched pops).
void RateSolver::push(const PopTime& t, Kind kind, std::uint32_t link, std::uint32_t version) {
  const std::uint64_t order = std::uint64_t{t.root} << 32 | std::uint64_t{t.sub} << 2 | kind;
  heap_.push_back({t.level, order, link, version});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

}  // namespace colltune::sim::detail
