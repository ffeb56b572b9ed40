#pragma once
// What limits a prediction: each resource made twice as fast in turn (every link class's
// bandwidth, every link's latency, every device's reduction rate; for a training step also the
// compute and Horovod's own costs), the prediction priced again, and the resource whose doubling
// shortens it most named, a link by where it sits on a route and its rate ("PCIe Gen4 x16
// between GPU and NIC, 31.5 GB/s, not the 50 GB/s NIC"). Where nothing twice as fast moves the
// prediction by 1 %, a runtime's own model caps it (NCCL's tuning tables ignore the links), or
// fixed costs do.
#include <functional>
#include <string>
#include <vector>

#include "colltune/sim/step_costs.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

// One resource made twice as fast, and the prediction then.
struct WhatIf {
  std::string resource;  // "compute", "nvlink", "pcie", "net", "sys", "shm", "links", "latency", "reduction", "horovod"
  std::string label;     // what it is on this machine, in words
  double rate_gbps = 0;  // a link class: the rate of its narrowest link on the route named
  double time_us = 0;    // the prediction with it twice as fast
};

struct Bottleneck {
  // A WhatIf's resource, or "runtime-model" (the runtime's own model caps the prediction:
  // nothing twice as fast moves it), or "fixed" (nothing moves it, no runtime model).
  std::string resource;
  std::string description;   // the WhatIf's label, or why nothing moves it
  double rate_gbps = 0;      // links
  double time_us = 0;        // the prediction
  double faster_us = 0;      // with the resource twice as fast (= time_us when nothing moves it)
  std::vector<WhatIf> whatifs;  // every resource tried, in the order tried
  // When the bottleneck is compute or Horovod: the resource that gains most after it (empty
  // when none gains 1 %), so a compute-bound step still says what limits its communication.
  std::string next;
  // "PCIe Gen4 x16 between GPU and NIC, 31.5 GB/s, not the 50 GB/s NIC (twice as fast: 25.6 ms
  // -> 22.1 ms)".
  std::string line() const;
};

// A copy of the machine with one resource twice as fast.
struct WhatIfMachine {
  WhatIf whatif;  // time_us not yet priced
  topo::Topology topology;
};
// One per link class the machine has, every link class at once (resource "links", where it has
// more than one), latency, reduction.
std::vector<WhatIfMachine> whatif_machines(const topo::Topology& topology);
// The bottleneck among priced what-ifs of a prediction of `time_us`.
Bottleneck pick_bottleneck(double time_us, std::vector<WhatIf> priced, bool runtime_model);
// Whether a what-if of one resource (any but "links", every link class at once) moves a
// prediction of `time_us` by more than 1 %: then pick_bottleneck names one of them, never
// "links", whose price it does not read.
bool one_resource_moves(double time_us, const std::vector<WhatIf>& priced);

// A prediction on a machine (the same question on a what-if copy of it).
using TopologyPrice = std::function<double(const topo::Topology&)>;
// A training step's prediction on a machine, for a workload and costs, with Horovod's cycle
// time scaled by `cycle_factor`.
using StepPrice =
    std::function<double(const topo::Topology&, const Workload&, const StepCosts&, double cycle_factor)>;

// The bottleneck of price(topology) over the machine's resources, plus `extra` what-ifs the
// caller priced. `runtime_model` says the prediction is a runtime's own model (NCCL's), so a
// prediction no resource moves is that model's cap.
Bottleneck find_bottleneck(const topo::Topology& topology, const TopologyPrice& price,
                           std::vector<WhatIf> extra = {}, bool runtime_model = false);

// A training step's bottleneck: the machine's resources, the compute (workload twice as fast)
// and Horovod (its cycle time halved and halved_overheads of `resolved`, the costs the step was
// priced with).
Bottleneck step_bottleneck(const topo::Topology& topology, const Workload& workload, const StepCosts& given,
                           const StepCosts& resolved, const StepPrice& price, bool runtime_model = false);

// Horovod's own costs twice as cheap: launch, per-tensor and negotiation halved, fusion copies
// and the compute slowdown under communication (interference - 1) twice as fast.
StepCosts halved_overheads(const StepCosts& resolved);

// The narrowest link of `kind` on the route a prediction leans on (rank 0 to the first rank of
// another host; on one host, rank 0 to rank 1), in words, with its rate and the faster network
// link beside it ("PCIe Gen4 x16 between GPU and NIC, 31.5 GB/s, not the 50 GB/s NIC"); empty
// when that route has no link of `kind`.
std::string describe_link(const topo::Topology& topology, topo::LinkKind kind, double* rate_gbps = nullptr);

}  // namespace colltune::sim
