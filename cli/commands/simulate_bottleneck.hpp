#pragma once
// simulate: what limits each row (sim/bottleneck.hpp). The machine's what-if copies are built
// and their models made once; every row is then priced on each. A colltune algorithm is priced
// by the analytic cost model (also for event-engine rows: each what-if would be a full event
// simulation), NCCL's choice as the row is: NCCL's model picks on each copy, colltune's schedule
// of the pick prices it there (sim::NcclPricer).
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "colltune/sim/bottleneck.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/nccl_price.hpp"

namespace colltune::cli {

class AllreduceBottlenecks {
 public:
  using Request = std::function<sim::CollectiveRequest(const std::string& algorithm, std::size_t bytes)>;
  // colltune's algorithms on the ranks of `model`, the topology's cost model; `request` builds a
  // row's request. With `one_size`, at() is asked for one size, and each machine prices it whole
  // rather than from its family of sizes (sim::SizeFamilies).
  AllreduceBottlenecks(const topo::Topology& topology, const sim::CostModel& model, Request request, bool one_size);
  // NCCL's choice of `coll` under `options`.
  AllreduceBottlenecks(const topo::Topology& topology, const sim::NcclOptions& options, sim::NcclColl coll);
  ~AllreduceBottlenecks();
  // The row of `algorithm` (a registry id; ignored for NCCL) at `bytes`, predicted `time_us`
  // (NCCL's pick as priced; colltune's rows are priced again by the analytic model on the machine
  // itself).
  sim::Bottleneck at(const std::string& algorithm, std::size_t bytes, double time_us) const;

 private:
  std::vector<sim::WhatIfMachine> machines_;
  std::unique_ptr<sim::CostModel> base_;  // colltune's algorithms on the machine itself
  std::vector<std::unique_ptr<sim::CostModel>> costs_;
  std::vector<std::unique_ptr<sim::NcclPricer>> nccl_;
  sim::NcclColl coll_ = sim::NcclColl::allreduce;
  Request request_;
};

}  // namespace colltune::cli
