// Entry points of the event simulator: one schedule, one request, or several schedules at once.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "colltune/common/error.hpp"
#include "event_sim_classes.hpp"
#include "event_sim_engine.hpp"
#include "event_sim_reference.hpp"
#include "event_sim_sweep.hpp"

namespace colltune::sim {

EventSimResult simulate_schedule(const coll::StepSource& source, const topo::Topology& topology,
                                 const EventSimOptions& options) {
  if (options.engine == EventEngine::reference) return detail::simulate_reference(source, topology, options);
  const bool one_start = std::all_of(options.rank_start_us.begin(), options.rank_start_us.end(),
                                     [](double t) { return t == 0; });
  if (options.fast_path && !options.record_trace) {
    // Late ranks, or a structure that rotates with counts that do not (uneven segments): the
    // sweep by classes, whose cost follows the asymmetry; the other paths where it gives up.
    const bool asymmetric = !one_start || source.rotation_period() == 0;
    if (asymmetric && source.structure_period() > 0)
      if (auto result = detail::sweep_by_classes(source, topology, options)) return std::move(*result);
    if (one_start) {
      if (auto result = detail::sweep_without_contention(source, topology, options)) return std::move(*result);
      if (auto result = detail::event_queue_folded(source, topology, options)) return std::move(*result);
    }
  }
  detail::Engine engine(source, topology, options);
  return engine.run();
}

EventSimResult simulate_collective(const CostModel& model, const topo::Topology& topology,
                                   const CollectiveRequest& request, const EventSimOptions& options) {
  const WireRequest wire = wire_request(request);
  const coll::AlgoOptions algo_options = model.options_for(coll::find_algorithm(request.algorithm), request.options);
  const std::unique_ptr<coll::StepSource> source =
      coll::open_schedule(request.algorithm, model.layout, wire.bytes / wire.elem_size, algo_options);
  EventSimOptions wire_options = options;
  wire_options.elem_size = wire.elem_size;
  EventSimResult result = simulate_schedule(*source, topology, wire_options);
  if (wire.compressed) {
    // The casts run on every rank before and after the collective.
    const double cast = model.cast_us(request.bytes);
    result.time_us += cast;
    for (double& t : result.rank_finish_us) t += cast;
  }
  return result;
}

namespace {

// Copies one group's steps into the combined schedule with peers renamed to global ranks.
void place_group(const PlacedSchedule& group, std::size_t index, coll::Schedule& out, std::vector<bool>& used) {
  const coll::Schedule& s = *group.schedule;
  const std::string what = "concurrent schedule " + std::to_string(index) + " ('" + s.algorithm + "')";
  if (static_cast<std::size_t>(s.nranks) != group.ranks.size() || s.ranks.size() != group.ranks.size())
    throw Error(what + ": has " + std::to_string(s.nranks) + " ranks but is placed on " +
                std::to_string(group.ranks.size()));
  for (int g : group.ranks) {
    if (g < 0 || g >= out.nranks) throw Error(what + ": rank " + std::to_string(g) + " is out of range");
    if (used[static_cast<std::size_t>(g)]) throw Error(what + ": rank " + std::to_string(g) + " is already used");
    used[static_cast<std::size_t>(g)] = true;
  }
  for (std::size_t j = 0; j < group.ranks.size(); ++j) {
    auto& steps = out.ranks[static_cast<std::size_t>(group.ranks[j])];
    steps = s.ranks[j];
    for (auto& step : steps)
      for (auto& op : step.ops) op.peer = group.ranks.at(static_cast<std::size_t>(op.peer));
  }
  out.count = std::max(out.count, s.count);
  out.algorithm += (out.algorithm.empty() ? "" : "+") + s.algorithm;
}

}  // namespace

coll::Schedule run_concurrently(const std::vector<PlacedSchedule>& groups, int nranks) {
  if (nranks < 1) throw Error("concurrent schedules: nranks " + std::to_string(nranks) + " must be positive");
  coll::Schedule out;
  out.nranks = nranks;
  out.ranks.resize(static_cast<std::size_t>(nranks));
  std::vector<bool> used(static_cast<std::size_t>(nranks), false);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].schedule == nullptr) throw Error("concurrent schedule " + std::to_string(i) + ": no schedule");
    if (i == 0) out.collective = groups[i].schedule->collective;
    place_group(groups[i], i, out, used);
  }
  return out;
}

}  // namespace colltune::sim
