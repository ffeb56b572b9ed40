// The priced machine and NCCL priced on it (priced_machine.hpp).
#include "colltune/sim/priced_machine.hpp"

#include <array>
#include <cstddef>

#include "colltune/sim/calibration.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::sim {

StepCosts costs_on(const topo::Topology& topology, StepCosts costs) {
  if (costs.nvlink_efficiency < 0) {
    const auto stated = topo::stated_nvlink_efficiency(topo::gpu_of(topology));
    costs.nvlink_efficiency = stated ? stated->fraction : kDefaultNvlinkEfficiency;
  }
  if (topology.calibration.empty()) return costs;
  for (double StepCosts::*e : {&StepCosts::nvlink_efficiency, &StepCosts::pcie_efficiency, &StepCosts::ib_efficiency,
                               &StepCosts::roce_efficiency, &StepCosts::tcp_efficiency})
    costs.*e = 1.0;
  return costs;
}

topo::Topology priced_machine(const topo::Topology& topology, const StepCosts& given) {
  const StepCosts costs = costs_on(topology, given);
  std::array<double, topo::kLinkKinds> efficiency;
  for (std::size_t k = 0; k < efficiency.size(); ++k)
    efficiency[k] = link_efficiency(costs, static_cast<topo::LinkKind>(k), topology.transport);
  return topology.with_scaled_bandwidth(efficiency);
}

std::unique_ptr<NcclPricer> make_nccl_pricer(const topo::Topology& topology, const NcclOptions& options,
                                             const StepCosts& costs) {
  const CalibrationFacts facts = calibration_facts(topology);
  if (facts.measured_links.empty())
    return std::make_unique<NcclPricer>(priced_machine(topology, costs), topology, options, facts.efficiency);
  return std::make_unique<NcclPricer>(priced_machine(topology, costs), measured_machine(topology), options,
                                      facts.efficiency);
}

std::unique_ptr<NcclPricer> make_nccl_pricer(const topo::Topology& topology, const topo::Topology& priced,
                                             const NcclOptions& options) {
  const CalibrationFacts facts = calibration_facts(topology);
  // NCCL's model reads the machine as measured; a topology without a calibration is that already.
  if (facts.measured_links.empty()) return std::make_unique<NcclPricer>(priced, topology, options, facts.efficiency);
  return std::make_unique<NcclPricer>(priced, measured_machine(topology), options, facts.efficiency);
}

}  // namespace colltune::sim
