#pragma once
// simulate: what limits each row (sim/bottleneck.hpp). The machine's what-if copies are built
// and their models made once; every row is then priced on each. A colltune algorithm is priced
// by the analytic cost model (also for event-engine rows: each what-if would be a full event
// simulation), NCCL's choice by NCCL's model, which chooses again on each copy.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "colltune/sim/bottleneck.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/nccl_model.hpp"

namespace colltune::cli {

class AllreduceBottlenecks {
 public:
  using Request = std::function<sim::CollectiveRequest(const std::string& algorithm, std::size_t bytes)>;
  // colltune's algorithms on the ranks of `model`, the topology's cost model; `request` builds a
  // row's request. With `one_size`, at() is asked for one size, and each machine prices it whole
  // rather than from its family of sizes (sim::SizeFamilies).
  AllreduceBottlenecks(const topo::Topology& topology, const sim::CostModel& model, Request request, bool one_size);
  // NCCL's choice under `options`.
  AllreduceBottlenecks(const topo::Topology& topology, const sim::NcclOptions& options);
  ~AllreduceBottlenecks();
  // The row of `algorithm` (a registry id; ignored for NCCL) at `bytes`, predicted `time_us`
  // (NCCL's; colltune's rows are priced again by the analytic model on the machine itself).
  sim::Bottleneck at(const std::string& algorithm, std::size_t bytes, double time_us) const;

 private:
  std::vector<sim::WhatIfMachine> machines_;
  std::unique_ptr<sim::CostModel> base_;  // colltune's algorithms on the machine itself
  std::vector<std::unique_ptr<sim::CostModel>> costs_;
  std::vector<std::unique_ptr<sim::NcclModel>> nccl_;
  Request request_;
};

}  // namespace colltune::cli
