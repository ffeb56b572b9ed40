#pragma once
// The machine a prediction is priced on, and NCCL priced on it: one place for every command
// that predicts NCCL (docs/nccl-model.md, "NCCL priced").
//  - priced_machine(): the topology with each link class's bandwidth scaled by the fraction a
//    collective achieves of it (StepCosts' efficiencies), except on a calibrated topology, whose
//    figures already are what collectives achieved (scaling again would count the loss twice);
//  - make_nccl_pricer(): NCCL's pick by NCCL's model on the machine as measured
//    (measured_machine, calibration.hpp), priced by colltune's schedules on priced_machine(),
//    with the calibration's protocol efficiencies.
#include <memory>

#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/nccl_price.hpp"
#include "colltune/sim/step_costs.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

// The costs as they apply on `topology`: a derived NVLink efficiency resolved from its GPU
// (topo::stated_nvlink_efficiency, else kDefaultNvlinkEfficiency); on a calibrated one the link
// efficiencies are 1.
StepCosts costs_on(const topo::Topology& topology, StepCosts costs);
// A copy of `topology` with each link class's bandwidth scaled by its efficiency in
// costs_on(topology, costs).
topo::Topology priced_machine(const topo::Topology& topology, const StepCosts& costs = {});

// Throws colltune::Error where NCCL's model does not fit the machine, or the topology's
// calibration does not fit it (calibration_facts).
std::unique_ptr<NcclPricer> make_nccl_pricer(const topo::Topology& topology, const NcclOptions& options = {},
                                             const StepCosts& costs = {});
// The same, for a caller that holds priced_machine(topology, costs) already.
std::unique_ptr<NcclPricer> make_nccl_pricer(const topo::Topology& topology, const topo::Topology& priced,
                                             const NcclOptions& options);

}  // namespace colltune::sim
