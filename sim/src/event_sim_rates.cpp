// Max-min fair bandwidth sharing (progressive filling), recomputed only where it can change.
//
// When flows start or end, only the flows connected to them through shared links (the
// connected component of the flow/link graph containing a changed link) can get new rates; a
// flow alone on its links just gets its path's bottleneck. Over that component:
//   1. every link offers its capacity equally to the flows on it whose rate is not yet fixed;
//   2. the link with the smallest such share is the bottleneck of all its unfixed flows: their
//      rate is that share, and it is taken off every other link they cross;
//   3. repeat until every flow has a rate.
// A min-heap of link shares with lazy invalidation makes this O((L + F*h) log L) for L links,
// F flows of h hops in the component. Flows whose rate did not change keep their end event.
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
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const HeapEntry top = heap_.back();
    heap_.pop_back();
    LinkState& bottleneck = links_[top.link];
    if (top.version != bottleneck.version || bottleneck.unfrozen == 0) continue;  // superseded
    const double share = bottleneck.remaining / bottleneck.unfrozen;
    if (share != top.share) {  // its share grew since: back in line with the current share
      ++bottleneck.version;
      bottleneck.key = share;
      heap_.push_back({share, top.link, bottleneck.version});
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
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
            heap_.push_back({now, static_cast<std::uint32_t>(l), link.version});
            std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
          }
        }
      }
    }
  }
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
