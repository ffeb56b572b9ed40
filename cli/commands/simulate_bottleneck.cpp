#include "commands/simulate_bottleneck.hpp"

#include "colltune/collectives/registry.hpp"

namespace colltune::cli {

AllreduceBottlenecks::AllreduceBottlenecks(const topo::Topology& topology, int ranks, Request request)
    : machines_(sim::whatif_machines(topology)), request_(std::move(request)) {
  base_ = std::make_unique<sim::CostModel>(topology, ranks);
  for (const sim::WhatIfMachine& m : machines_) costs_.push_back(std::make_unique<sim::CostModel>(m.topology, ranks));
}

AllreduceBottlenecks::AllreduceBottlenecks(const topo::Topology& topology, const sim::NcclOptions& options)
    : machines_(sim::whatif_machines(topology)) {
  for (const sim::WhatIfMachine& m : machines_) nccl_.push_back(std::make_unique<sim::NcclModel>(m.topology, options));
}

AllreduceBottlenecks::~AllreduceBottlenecks() = default;

sim::Bottleneck AllreduceBottlenecks::at(const std::string& algorithm, std::size_t bytes, double time_us) const {
  std::vector<sim::WhatIf> priced;
  for (std::size_t i = 0; i < machines_.size(); ++i) {
    sim::WhatIf w = machines_[i].whatif;
    if (!nccl_.empty()) {
      w.time_us = nccl_[i]->choose(sim::NcclColl::allreduce, bytes).time_us;
    } else {
      const coll::Algorithm& algo = coll::find_algorithm(algorithm);
      w.time_us = costs_[i]->time_us(algo, request_(algorithm, bytes));
    }
    priced.push_back(std::move(w));
  }
  // colltune's rows against the analytic price on the machine itself (an event row's time is
  // another model's).
  const double base = nccl_.empty() ? base_->time_us(coll::find_algorithm(algorithm), request_(algorithm, bytes)) : time_us;
  return sim::pick_bottleneck(base, std::move(priced), !nccl_.empty());
}

}  // namespace colltune::cli
