// The priced machine and NCCL priced on it (priced_machine.hpp).
#include "colltune/sim/priced_machine.hpp"

#include "colltune/sim/calibration.hpp"

namespace colltune::sim {

StepCosts costs_on(const topo::Topology& topology, StepCosts costs) {
  if (topology.calibration.empty()) return costs;
  for (double StepCosts::*e : {&StepCosts::nvlink_efficiency, &StepCosts::pcie_efficiency, &StepCosts::ib_efficiency,
                               &StepCosts::roce_efficiency, &StepCosts::tcp_efficiency})
    costs.*e = 1.0;
  return costs;
}

topo::Topology priced_machine(const topo::Topology& topology, const StepCosts& given) {
  const StepCosts costs = costs_on(topology, given);
  topo::Topology out(topology);
  for (topo::LinkKind kind : {topo::LinkKind::nvlink, topo::LinkKind::pcie, topo::LinkKind::net}) {
    const double e = link_efficiency(costs, kind, topology.transport);
    if (e != 1.0) out = out.with_scaled_bandwidth(kind, e);
  }
  return out;
}

std::unique_ptr<NcclPricer> make_nccl_pricer(const topo::Topology& topology, const NcclOptions& options,
                                             const StepCosts& costs) {
  return make_nccl_pricer(topology, priced_machine(topology, costs), options);
}

std::unique_ptr<NcclPricer> make_nccl_pricer(const topo::Topology& topology, const topo::Topology& priced,
                                             const NcclOptions& options) {
  const CalibrationFacts facts = calibration_facts(topology);
  return std::make_unique<NcclPricer>(priced, measured_machine(topology), options, facts.efficiency);
}

}  // namespace colltune::sim
