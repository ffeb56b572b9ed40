// Max-min fair bandwidth sharing (progressive filling), recomputed only where it can change.
//
// When flows start or end, only the flows connected to them through shared links (the
// connected component of the flow/link graph containing a changed link) can get new rates; a
// flow alone on its links just gets its path's bottleneck. Over that component:
//   1. every link offers its capacity equally to the flows on it whose rate is not yet fixed;
//   2. the link with the smallest such share is the bottleneck of all its unfixed flows: their
//      rate is that share, and it is taken off every other link they cross;
//   3. repeat until every flow has a rate.
// The links are taken in order of (share, link index): the initial shares sorted once, plus a
// small heap of links whose share grew before their turn (a share is only recomputed when its
// link comes up), O((L + F*h) log L) at worst for L links, F flows of h hops in the component.
// A component whose multiset of channels (paths) was solved before reuses those rates (they are
// the same, bit for bit). Flows whose rate did not change keep their end event.
#include <algorithm>
#include <cmath>

#include "event_sim_engine.hpp"

namespace colltune::sim::detail {

void Engine::update_rates(double t) {
  if (new_flows_.empty() && dirty_links_.empty()) return;
  ++epoch_;
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  for (std::size_t l : dirty_links_) visit_link(l);
  expand_component();
  for (std::uint32_t f : new_flows_) {
    FlowState& fl = flows_[f];
    if (!fl.on_links || fl.mark == epoch_) continue;
    if (alone_on_links(fl)) {
      set_rate(f, fl.path->bottleneck_gbps * 1e3, t);  // the common uncontended case: no search
    } else {
      visit_flow(f);
    }
  }
  expand_component();
  new_flows_.clear();
  dirty_links_.clear();
  fill_progressively();
  apply_rates(t);
}

bool Engine::alone_on_links(const FlowState& fl) const {
  for (std::size_t l : fl.path->links)
    if (links_[l].flows.size() != 1) return false;
  return true;
}

void Engine::expand_component() {
  while (!stack_.empty()) {
    const std::size_t l = stack_.back();
    stack_.pop_back();
    for (std::uint32_t f : links_[l].flows) visit_flow(f);
  }
}

void Engine::visit_link(std::size_t l) {
  LinkState& link = links_[l];
  if (link.mark == epoch_) return;
  link.mark = epoch_;
  comp_links_.push_back(l);
  stack_.push_back(l);
}

void Engine::visit_flow(std::uint32_t f) {
  FlowState& fl = flows_[f];
  if (fl.mark == epoch_) return;
  fl.mark = epoch_;
  comp_flows_.push_back(f);
  for (std::size_t l : fl.path->links) visit_link(l);
}

void Engine::fill_progressively() {
  bool shared = false;
  for (std::size_t l : comp_links_) shared = shared || links_[l].flows.size() > 1;
  if (!shared) {  // no link carries two flows: each flow runs at its path's bottleneck
    for (std::uint32_t f : comp_flows_) flows_[f].new_rate = flows_[f].path->bottleneck_gbps * 1e3;
    return;
  }
  if (recall_rates()) return;
  // Shares only grow as flows freeze (in exact arithmetic), so a link's heap key may lag behind
  // its share: a popped key that is out of date is pushed again with the current share, and a
  // share that fell below its key (rounding) is pushed at once. Every key stays a lower bound
  // of its link's share, so links pop in exactly the order of the eager scheme: least
  // (share, link) first.
  heap_.clear();
  for (std::size_t l : comp_links_) {
    LinkState& link = links_[l];
    link.remaining = link.capacity;
    link.unfrozen = static_cast<std::uint32_t>(link.flows.size());
    ++link.version;
    if (link.unfrozen > 0) {
      link.key = link.remaining / link.unfrozen;
      heap_.push_back({link.key, static_cast<std::uint32_t>(l), link.version});
    }
  }
  // The initial keys in sorted order, and the keys pushed since in a heap: the next link is the
  // lesser of the two fronts.
  std::sort(heap_.begin(), heap_.end(), [](const HeapEntry& a, const HeapEntry& b) { return b > a; });
  repushed_.clear();
  std::size_t next = 0;
  while (next < heap_.size() || !repushed_.empty()) {
    HeapEntry top;
    if (repushed_.empty() || (next < heap_.size() && repushed_.front() > heap_[next])) {
      top = heap_[next++];
    } else {
      std::pop_heap(repushed_.begin(), repushed_.end(), std::greater<>());
      top = repushed_.back();
      repushed_.pop_back();
    }
    LinkState& bottleneck = links_[top.link];
    if (top.version != bottleneck.version || bottleneck.unfrozen == 0) continue;  // superseded
    const double share = bottleneck.remaining / bottleneck.unfrozen;
    if (share != top.share) {  // its share grew since: back in line with the current share
      ++bottleneck.version;
      bottleneck.key = share;
      repushed_.push_back({share, top.link, bottleneck.version});
      std::push_heap(repushed_.begin(), repushed_.end(), std::greater<>());
      continue;
    }
    ++bottleneck.version;
    bottleneck.unfrozen = 0;
    for (std::uint32_t f : bottleneck.flows) {
      FlowState& fl = flows_[f];
      if (fl.new_rate >= 0) continue;
      fl.new_rate = share;
      for (std::size_t l : fl.path->links) {
        LinkState& link = links_[l];
        if (l == top.link || link.unfrozen == 0) continue;
        link.remaining = std::max(0.0, link.remaining - share);
        --link.unfrozen;
        if (link.unfrozen > 0) {
          const double now = link.remaining / link.unfrozen;
          if (now < link.key) {  // rounding made it smaller: its key must follow
            ++link.version;
            link.key = now;
            repushed_.push_back({now, static_cast<std::uint32_t>(l), link.version});
            std::push_heap(repushed_.begin(), repushed_.end(), std::greater<>());
          }
        }
      }
    }
  }
  remember_rates();
}

namespace {
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
constexpr std::size_t kMaxSolved = std::size_t{1} << 22;  // channels remembered, at most
}  // namespace

// Progressive filling over a component reads only its links and its flows' paths, so equal
// multisets of channels (one path each) get equal rates, bit for bit: look the multiset up.
bool Engine::recall_rates() {
  if (chan_count_.size() < channels_.size()) {
    chan_count_.resize(channels_.size(), 0);
    chan_rate_.resize(channels_.size(), 0.0);
  }
  comp_chans_.clear();
  for (std::uint32_t f : comp_flows_) {
    const std::uint32_t c = flows_[f].chan;
    if (chan_count_[c]++ == 0) comp_chans_.push_back(c);
  }
  std::uint64_t h = comp_chans_.size();
  for (std::uint32_t c : comp_chans_) h += mix((std::uint64_t{c} << 32) | chan_count_[c]);
  comp_hash_ = h;
  bool hit = false;
  const auto [lo, hi] = solved_index_.equal_range(h);
  for (auto it = lo; it != hi && !hit; ++it) {
    const Solved& s = solved_[it->second];
    if (s.chans.size() != comp_chans_.size()) continue;
    hit = true;
    for (std::size_t i = 0; i < s.chans.size() && hit; ++i) hit = chan_count_[s.chans[i]] == s.counts[i];
    if (hit)
      for (std::size_t i = 0; i < s.chans.size(); ++i) chan_rate_[s.chans[i]] = s.rates[i];
  }
  if (hit) {
    for (std::uint32_t f : comp_flows_) flows_[f].new_rate = chan_rate_[flows_[f].chan];
    for (std::uint32_t c : comp_chans_) chan_count_[c] = 0;
  }
  return hit;
}

void Engine::remember_rates() {
  if (solved_size_ + comp_chans_.size() <= kMaxSolved) {
    for (std::uint32_t f : comp_flows_) chan_rate_[flows_[f].chan] = flows_[f].new_rate;
    Solved s;
    s.chans = comp_chans_;
    s.counts.reserve(comp_chans_.size());
    s.rates.reserve(comp_chans_.size());
    for (std::uint32_t c : comp_chans_) {
      s.counts.push_back(chan_count_[c]);
      s.rates.push_back(chan_rate_[c]);
    }
    solved_size_ += comp_chans_.size();
    solved_index_.emplace(comp_hash_, static_cast<std::uint32_t>(solved_.size()));
    solved_.push_back(std::move(s));
  }
  for (std::uint32_t c : comp_chans_) chan_count_[c] = 0;
}

void Engine::apply_rates(double t) {
  for (std::uint32_t f : comp_flows_) {
    FlowState& fl = flows_[f];
    const double rate = fl.new_rate;
    fl.new_rate = -1;
    set_rate(f, rate, t);
  }
}

// A flow's rate changes at t: account the bytes sent at the old rate, reschedule its end.
void Engine::set_rate(std::uint32_t f, double rate, double t) {
  FlowState& fl = flows_[f];
  // Shares are positive in exact arithmetic; keep rounding from stalling a flow forever.
  rate = std::max(rate, 1e-9);
  if (fl.rate > 0 && std::abs(rate - fl.rate) <= 1e-12 * fl.rate) return;  // its end event stands
  fl.left = std::max(0.0, fl.left - fl.rate * (t - fl.last_t));
  fl.last_t = t;
  fl.rate = rate;
  ++fl.version;
  queue_.push(Event{t + fl.left / rate, kFlowBit | f, fl.version});
}

}  // namespace colltune::sim::detail
