#include "commands/simulate_bottleneck.hpp"

#include "colltune/collectives/registry.hpp"
#include "colltune/common/parallel.hpp"

namespace colltune::cli {

AllreduceBottlenecks::AllreduceBottlenecks(const topo::Topology& topology, int ranks, Request request)
    : machines_(sim::whatif_machines(topology)), request_(std::move(request)) {
  base_ = std::make_unique<sim::CostModel>(topology, ranks);
  // Each machine's own cost model (routes sampled on its own copy), on several threads.
  costs_ = parallel_map(machines_.size(), [&](std::size_t i) {
    return std::make_unique<sim::CostModel>(machines_[i].topology, ranks);
  });
}

AllreduceBottlenecks::AllreduceBottlenecks(const topo::Topology& topology, const sim::NcclOptions& options)
    : machines_(sim::whatif_machines(topology)) {
  nccl_ = parallel_map(machines_.size(), [&](std::size_t i) {
    return std::make_unique<sim::NcclModel>(machines_[i].topology, options);
  });
}

AllreduceBottlenecks::~AllreduceBottlenecks() = default;

sim::Bottleneck AllreduceBottlenecks::at(const std::string& algorithm, std::size_t bytes, double time_us) const {
  // Each what-if machine priced on its own (on several threads: a large machine's schedule is
  // seconds of the reference pricer on each).
  std::vector<sim::WhatIf> priced = parallel_map(machines_.size(), [&](std::size_t i) {
    sim::WhatIf w = machines_[i].whatif;
    if (!nccl_.empty()) {
      w.time_us = nccl_[i]->choose(sim::NcclColl::allreduce, bytes).time_us;
    } else {
      const coll::Algorithm& algo = coll::find_algorithm(algorithm);
      w.time_us = costs_[i]->time_us(algo, request_(algorithm, bytes));
    }
    return w;
  });
  // colltune's rows against the analytic price on the machine itself (an event row's time is
  // another model's).
  const double base = nccl_.empty() ? base_->time_us(coll::find_algorithm(algorithm), request_(algorithm, bytes)) : time_us;
  return sim::pick_bottleneck(base, std::move(priced), !nccl_.empty());
}

}  // namespace colltune::cli
