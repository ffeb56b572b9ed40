// Late ranks that have caught up: the rest of the run folded by symmetry again.
//
// A late rank breaks the schedule's symmetry, so the event queue runs every rank from the start.
// But the delay may stop mattering before the end. In recursive halving-doubling each rank it
// delays delays its partner at the next step; once the delay has reached every rank, every pair
// of a step may start its transfers at one instant again (on a 16,384-rank fat-tree, at the
// first doubling step: half of the run's transfers come after it).
//
// The state at such an instant t (together_in_step):
//   1. every rank is in the same step k, has posted its ops of step k, and none has completed;
//   2. every transfer under way started at t: each op of step k is in one (none waits for its
//      peer), and no earlier transfer is still on a link or arriving;
//   3. no device has reductions queued past t.
// What follows then depends on the steps from k and on t only: it is the run of those steps with
// every rank starting at t, which event_queue_folded folds by the schedule's declared symmetry
// (a symmetry of every step is one of the steps from k). The join (joined): finish times are the
// folded run's; events and transfers this run counted for what the folded run counts again (each
// rank's entry into step k, the transfers started at t) are taken off; a link's bytes and busy
// time are the two runs' sums, a busy interval open at t split there. The times equal the
// unfolded run's to rounding (the fold shares a link class's bandwidth among its copies, and the
// rate solver starts afresh at t), as every fold's do (test_event_sim_reference.cpp).
#include <algorithm>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "event_sim_engine.hpp"

namespace colltune::sim::detail {
namespace {

// The steps of `source` from `first` on, as a schedule of their own, with the symmetries the
// source declares (which hold for any of its steps).
class StepsFrom final : public coll::StepSource {
 public:
  StepsFrom(const coll::StepSource& source, std::size_t first)
      : coll::StepSource(source.header()), source_(source), first_(first) {}
  std::size_t num_steps(int rank) const override {
    const std::size_t all = source_.num_steps(rank);
    return all > first_ ? all - first_ : 0;
  }
  std::span<const coll::Op> ops(int rank, std::size_t step, std::vector<coll::Op>& scratch) const override {
    return source_.ops(rank, first_ + step, scratch);
  }
  int rotation_period() const override { return source_.rotation_period(); }
  int xor_period() const override { return source_.xor_period(); }
  int structure_period() const override { return source_.structure_period(); }
  void irregular_ranks(std::size_t step, std::vector<int>& out) const override {
    source_.irregular_ranks(first_ + step, out);
  }

 private:
  const coll::StepSource& source_;
  std::size_t first_;
};

// Two runs' link usage, each sorted by link, as one: bytes and busy time added.
std::vector<LinkUsage> added(const std::vector<LinkUsage>& a, const std::vector<LinkUsage>& b) {
  std::vector<LinkUsage> out;
  out.reserve(a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].link < b[j].link)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].link < a[i].link) {
      out.push_back(b[j++]);
    } else {
      out.push_back({a[i].link, a[i].bytes + b[j].bytes, a[i].busy_us + b[j].busy_us});
      ++i;
      ++j;
    }
  }
  return out;
}

}  // namespace

void Engine::count_entry(std::size_t step) {
  if (step >= entered_.size()) entered_.resize(step + 1, 0);
  ++entered_[step];
}

// Conditions 1-3 above, at the end of instant t (before its rates are solved). The two counts
// come first, so that the pass over the ranks runs only where every rank has reached rank 0's
// step and every transfer under way is new.
bool Engine::together_in_step(double t) const {
  const std::size_t live = flows_.size() - free_flows_.size();  // on links, or arriving
  if (live == 0 || new_flows_.size() != live) return false;
  const std::size_t step = ranks_.front().step;
  if (step >= entered_.size() || entered_[step] != static_cast<int>(ranks_.size())) return false;
  std::size_t outstanding = 0;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const RankState& rs = ranks_[r];
    if (rs.finished || rs.waiting_to_start || rs.step != step || rs.outstanding != rs.ops.size() ||
        reduce_free_[device_[r]] > t)
      return false;
    outstanding += rs.outstanding;
  }
  return outstanding == 2 * live;  // every op in a transfer: one send and one receive each
}

// The run of the steps from the current one with every rank starting at t, folded; nullopt
// where the fold does not apply (then never again: what it needs of the machine and the schedule
// does not change), and this run goes on unfolded.
std::optional<EventSimResult> Engine::refold(double t) {
  refold_ = false;
  const StepsFrom rest(source_, ranks_.front().step);
  EventSimOptions options = options_;
  options.rank_start_us.assign(ranks_.size(), t);
  std::optional<EventSimResult> folded =
      event_queue_folded(rest, topology_, options);  // or nullopt (never the whole run)
  if (folded && prefetch_) prefetch_->stop();        // no more routes needed
  return folded;
}

EventSimResult Engine::joined(EventSimResult rest, double t) const {
  const std::size_t again = new_flows_.size();  // started at t: the rest starts them too
  rest.events += result_.events - ranks_.size() - again;
  rest.flows += result_.flows - again;
  rest.event_fold_from_step = ranks_.front().step;
  rest.incremental_solves += solver_.counts().incremental;
  rest.recalled_solves += solver_.counts().recalled;
  rest.full_solves += solver_.counts().filled;
  rest.routes_found_ahead += result_.routes_found_ahead;
  // A link busy at t carries only transfers started at t. If its earlier transfers ended at t
  // before the new ones started, end_flow closed their interval (busy_us) and start_flow opened
  // one at t (busy_since = t: nothing to add); if a new one started first, the interval stayed
  // open from busy_since, and its part before t is added here. The rest counts from t.
  std::vector<LinkUsage> before;
  for (std::size_t l = 0; l < links_.size(); ++l) {
    const LinkState& link = links_[l];
    if (link.bytes <= 0) continue;  // carried nothing yet (busy only with transfers started at t)
    before.push_back({l, link.bytes, link.busy_us + (link.flows.empty() ? 0.0 : t - link.busy_since)});
  }
  rest.links = added(before, rest.links);
  return rest;
}

}  // namespace colltune::sim::detail
