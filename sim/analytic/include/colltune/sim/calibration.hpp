#pragma once
// What a calibrated topology (colltune calibrate -o, docs/calibration.md) tells the models
// beyond its link figures: the protocol efficiencies it fitted, the rank count it was fitted on,
// and the machine as measured (its link figures before calibration), which NCCL's model reads:
// calibration changes what NCCL's choice costs, never the choice (docs/nccl-model.md).
#include <string>
#include <utility>
#include <vector>

#include "colltune/sim/nccl_price.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

struct CalibrationFacts {
  bool calibrated = false;  // the topology carries a "calibration" object
  int nranks = 0;           // ranks it was fitted on
  ProtocolEfficiency efficiency;  // fitted values, else nominal
  // Per link of the topology, in link order, its bandwidth (GB/s) and latency (us) as measured,
  // before calibration; empty in files written before colltune kept them (format version 1).
  std::vector<std::pair<double, double>> measured_links;
  // The smallest and largest message of the rows it was fitted on (bytes; 0, 0 where it keeps
  // no rows): predictions outside them extrapolate the fit.
  std::size_t measured_min_bytes = 0;
  std::size_t measured_max_bytes = 0;
};

// Reads the topology's calibration object. Throws colltune::Error, one line naming the file's
// topology and the key, for a value out of its physical range (an efficiency outside (0, 1], a
// rank count that is not the topology's, measured links that do not match its links: a
// calibrated file used on another machine shape).
CalibrationFacts calibration_facts(const topo::Topology& topology);

// The machine as measured: `topology` with the measured link figures of its calibration back
// in place (NCCL's model reads link figures to see NVLink counts, PCIe generations and NIC
// speeds), or `topology` itself where it is not calibrated or its file does not keep them.
topo::Topology measured_machine(const topo::Topology& topology);

}  // namespace colltune::sim
