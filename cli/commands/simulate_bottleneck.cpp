#include "commands/simulate_bottleneck.hpp"

#include <optional>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/parallel.hpp"
#include "colltune/sim/priced_machine.hpp"

namespace colltune::cli {

AllreduceBottlenecks::AllreduceBottlenecks(const topo::Topology& topology, const sim::CostModel& model, Request request,
                                           bool one_size)
    : machines_(sim::whatif_machines(topology)), request_(std::move(request)) {
  const sim::SizeFamilies families = one_size ? sim::SizeFamilies::skip : sim::SizeFamilies::use;
  const int ranks = model.layout.nranks();
  base_ = std::make_unique<sim::CostModel>(model);  // the machine's own: copied, not derived again
  base_->families = families;
  // Each machine's own cost model (routes sampled on its own copy), on several threads.
  costs_ = parallel_map(machines_.size(), [&](std::size_t i) {
    auto cost = std::make_unique<sim::CostModel>(machines_[i].topology, ranks);
    cost->families = families;
    return cost;
  });
}

AllreduceBottlenecks::AllreduceBottlenecks(const topo::Topology& topology, const sim::NcclOptions& options,
                                           sim::NcclColl coll)
    : machines_(sim::whatif_machines(topology)), coll_(coll) {
  nccl_ = parallel_map(machines_.size(),
                       [&](std::size_t i) { return sim::make_nccl_pricer(machines_[i].topology, options); });
}

AllreduceBottlenecks::~AllreduceBottlenecks() = default;

sim::Bottleneck AllreduceBottlenecks::at(const std::string& algorithm, std::size_t bytes, double time_us) const {
  // Each what-if machine priced on its own, and colltune's rows on the machine itself too (the
  // analytic price: an event row's time is another model's), all on several threads: a large
  // machine's schedule is seconds of the reference pricer on each. Index n is the machine itself.
  const std::size_t n = machines_.size();
  const auto price_on = [&](std::size_t i) {
    if (!nccl_.empty()) return i < n ? nccl_[i]->price(coll_, bytes).time_us : time_us;
    const sim::CostModel& model = i < n ? *costs_[i] : *base_;
    return model.time_us(coll::find_algorithm(algorithm), request_(algorithm, bytes));
  };
  // Every link class at once counts only where no one resource moves the row
  // (sim::one_resource_moves): that machine is priced after the others, and only then.
  std::vector<std::size_t> first;
  std::optional<std::size_t> links;
  for (std::size_t i = 0; i < n; ++i) {
    if (machines_[i].whatif.resource == "links") {
      links = i;
    } else {
      first.push_back(i);
    }
  }
  first.push_back(n);
  const std::vector<double> times = parallel_map(first.size(), [&](std::size_t k) { return price_on(first[k]); });
  std::vector<std::optional<double>> by_machine(n);
  std::vector<sim::WhatIf> singles;
  for (std::size_t k = 0; k + 1 < first.size(); ++k) {
    by_machine[first[k]] = times[k];
    singles.push_back(machines_[first[k]].whatif);
    singles.back().time_us = times[k];
  }
  const double base = times.back();
  if (links && !sim::one_resource_moves(base, singles)) by_machine[*links] = price_on(*links);
  std::vector<sim::WhatIf> priced;  // in the machines' order, as pick_bottleneck breaks ties
  for (std::size_t i = 0; i < n; ++i) {
    if (!by_machine[i]) continue;
    priced.push_back(machines_[i].whatif);
    priced.back().time_us = *by_machine[i];
  }
  return sim::pick_bottleneck(base, std::move(priced), !nccl_.empty());
}

}  // namespace colltune::cli
