// Stored schedules as step sources, materialising generated ones, and opening an algorithm's
// schedule in whichever form it has.
#include "colltune/collectives/step_source.hpp"

#include <string>

#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

// A view of the schedule needs one step list per rank: anything else is refused here, where
// every reader of a stored schedule passes, instead of indexing past the lists later.
ScheduleHeader header_of(const Schedule& s) {
  if (s.nranks < 0 || static_cast<std::size_t>(s.nranks) != s.ranks.size())
    throw Error("schedule '" + s.algorithm + "': nranks " + std::to_string(s.nranks) + " does not match its " +
                std::to_string(s.ranks.size()) + " rank step lists");
  return ScheduleHeader{s.algorithm, s.collective, s.nranks, s.count, s.owned, s.helpers};
}

}  // namespace

StoredSteps::StoredSteps(const Schedule& schedule) : StepSource(header_of(schedule)), schedule_(&schedule) {}

StoredSteps::StoredSteps(Schedule&& schedule, int xor_period)
    : StepSource(header_of(schedule)), owned_(std::make_unique<Schedule>(std::move(schedule))),
      schedule_(owned_.get()), xor_period_(xor_period) {}

std::size_t StoredSteps::num_steps(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return r < schedule_->ranks.size() ? schedule_->ranks[r].size() : 0;
}

std::span<const Op> StoredSteps::ops(int rank, std::size_t step, std::vector<Op>& /*scratch*/) const {
  return schedule_->ranks[static_cast<std::size_t>(rank)][step].ops;
}

Schedule materialize(const StepSource& source) {
  const ScheduleHeader& h = source.header();
  Schedule s;
  s.algorithm = h.algorithm;
  s.collective = h.collective;
  s.nranks = h.nranks;
  s.count = h.count;
  s.owned = h.owned;
  s.helpers = h.helpers;
  s.ranks.resize(static_cast<std::size_t>(std::max(h.nranks, 0)));
  std::vector<Op> scratch;
  for (int r = 0; r < h.nranks; ++r) {
    auto& steps = s.ranks[static_cast<std::size_t>(r)];
    const std::size_t n = source.num_steps(r);
    for (std::size_t i = 0; i < n; ++i) {
      const std::span<const Op> ops = source.ops(r, i, scratch);
      if (!ops.empty()) steps.push_back(Step{std::vector<Op>(ops.begin(), ops.end())});
    }
  }
  return s;
}

std::unique_ptr<StepSource> open_schedule(std::string_view id, const RankLayout& layout, std::size_t count,
                                          const AlgoOptions& options) {
  return applicable_algorithm(id, layout, count, options).schedule(layout, count, options);
}

Schedule StoredSteps::take() {
  if (!owned_) throw Error("schedule '" + header().algorithm + "': a view cannot give up its schedule");
  Schedule out = std::move(*owned_);
  owned_.reset();
  schedule_ = nullptr;
  return out;
}

}  // namespace colltune::coll
