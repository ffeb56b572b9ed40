// The step model's named costs: the table of names, parsing of "name=value", and which
// efficiency a link class gets.
#include "colltune/sim/step_costs.hpp"

#include <cmath>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"

namespace colltune::sim {

// The ranges are physical ones, so that no cost can drive a step time to infinity or zero: a
// rate within the links' range (limits.hpp), a time of at most a second (limits::kMaxLatencyUs),
// a slowdown of at most 1000x, an efficiency of at least 0.1 %.
const std::vector<StepCostField>& step_cost_fields() {
  using parse::Bounds;
  const Bounds rate = Bounds::closed(limits::kMinBandwidthGbps, limits::kMaxBandwidthGbps);
  const Bounds time = Bounds::closed(0, limits::kMaxLatencyUs);
  const Bounds fraction = Bounds::closed(1e-3, 1);
  static const std::vector<StepCostField> fields{
      {"fusion_copy_gbps", &StepCosts::fusion_copy_gbps, "GB/s",
       "fusion buffer copy in and out, per tensor byte (default: GPU memory bandwidth x memory fraction / 2)", rate,
       true},
      {"negotiation_base_us", &StepCosts::negotiation_base_us, "us",
       "negotiation per cycle, rank-independent part (default: fastest 64-byte allreduce)", time, true},
      {"negotiation_us_per_rank", &StepCosts::negotiation_us_per_rank, "us", "negotiation per cycle, per rank", time,
       false},
      {"tensor_us", &StepCosts::tensor_us, "us", "per tensor in a fusion buffer", time, false},
      {"launch_us", &StepCosts::launch_us, "us", "per allreduce launch", time, false},
      {"interference", &StepCosts::interference, "x", "slowdown of backward compute while an allreduce runs",
       Bounds::closed(1, 1000), false},
      {"nvlink_efficiency", &StepCosts::nvlink_efficiency, "fraction",
       "of NVLink bandwidth (default: the figure stated for the GPU, else H100's 370/450)", fraction, true},
      {"pcie_efficiency", &StepCosts::pcie_efficiency, "fraction", "of PCIe bandwidth", fraction, false},
      {"ib_efficiency", &StepCosts::ib_efficiency, "fraction", "of network bandwidth over InfiniBand", fraction, false},
      {"roce_efficiency", &StepCosts::roce_efficiency, "fraction", "of network bandwidth over RoCE", fraction, false},
      {"tcp_efficiency", &StepCosts::tcp_efficiency, "fraction", "of network bandwidth over TCP sockets", fraction,
       false},
  };
  return fields;
}

const StepCostField* find_step_cost_field(std::string_view name) {
  for (const StepCostField& f : step_cost_fields())
    if (f.name == name) return &f;
  return nullptr;
}

namespace {

std::string known_costs() {
  std::string out;
  for (const StepCostField& f : step_cost_fields()) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

}  // namespace

void set_step_cost(StepCosts& costs, std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string_view::npos)
    throw Error("--cost " + parse::shown(assignment) + ": expected NAME=VALUE (names: " + known_costs() + ")");
  const std::string_view name = assignment.substr(0, eq);
  const StepCostField* f = find_step_cost_field(name);
  if (!f)
    throw Error("--cost " + parse::shown(assignment) + ": unknown cost '" + parse::shown(name) + "' (known: " +
                known_costs() + ")");
  costs.*f->member = parse::number(assignment.substr(eq + 1), "--cost " + std::string(name), f->range);
}

double link_efficiency(const StepCosts& c, topo::LinkKind kind, topo::NetTransport transport) {
  switch (kind) {
    case topo::LinkKind::nvlink: return c.nvlink_efficiency;
    case topo::LinkKind::pcie: return c.pcie_efficiency;
    case topo::LinkKind::net:
      return transport == topo::NetTransport::tcp    ? c.tcp_efficiency
             : transport == topo::NetTransport::roce ? c.roce_efficiency
                                                     : c.ib_efficiency;
    case topo::LinkKind::shm:
    case topo::LinkKind::sys: return 1.0;
  }
  return 1.0;
}

}  // namespace colltune::sim
