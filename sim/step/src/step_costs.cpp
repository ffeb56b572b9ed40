// The step model's named costs: the table of names, parsing of "name=value", and which
// efficiency a link class gets.
#include "colltune/sim/step_costs.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "colltune/common/error.hpp"

namespace colltune::sim {

const std::vector<StepCostField>& step_cost_fields() {
  static const std::vector<StepCostField> fields{
      {"fusion_copy_gbps", &StepCosts::fusion_copy_gbps, "GB/s",
       "fusion buffer copy in and out, per tensor byte (default: GPU memory bandwidth x memory fraction / 2)", 0, true, 0,
       true},
      {"negotiation_base_us", &StepCosts::negotiation_base_us, "us",
       "negotiation per cycle, rank-independent part (default: fastest 64-byte allreduce)", 0, false, 0, true},
      {"negotiation_us_per_rank", &StepCosts::negotiation_us_per_rank, "us", "negotiation per cycle, per rank", 0,
       false, 0, false},
      {"tensor_us", &StepCosts::tensor_us, "us", "per tensor in a fusion buffer", 0, false, 0, false},
      {"launch_us", &StepCosts::launch_us, "us", "per allreduce launch", 0, false, 0, false},
      {"interference", &StepCosts::interference, "x", "slowdown of backward compute while an allreduce runs", 1,
       false, 0, false},
      {"nvlink_efficiency", &StepCosts::nvlink_efficiency, "fraction", "of NVLink bandwidth", 0, true, 1, false},
      {"pcie_efficiency", &StepCosts::pcie_efficiency, "fraction", "of PCIe bandwidth", 0, true, 1, false},
      {"ib_efficiency", &StepCosts::ib_efficiency, "fraction", "of network bandwidth over InfiniBand", 0, true, 1,
       false},
      {"roce_efficiency", &StepCosts::roce_efficiency, "fraction", "of network bandwidth over RoCE", 0, true, 1, false},
      {"tcp_efficiency", &StepCosts::tcp_efficiency, "fraction", "of network bandwidth over TCP sockets", 0, true, 1,
       false},
  };
  return fields;
}

namespace {

std::string known_costs() {
  std::string out;
  for (const StepCostField& f : step_cost_fields()) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

// "%g" of a bound: 0, 1, 0.5 as people write them.
std::string bound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string range_of(const StepCostField& f) {
  std::string out = (f.min_exclusive ? "> " : ">= ") + bound(f.min);
  if (f.max > 0) out += " and <= " + bound(f.max);
  return out;
}

}  // namespace

void set_step_cost(StepCosts& costs, std::string_view assignment) {
  const std::string where = "--cost " + std::string(assignment);
  const std::size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) throw Error(where + ": expected NAME=VALUE (names: " + known_costs() + ")");
  const std::string_view name = assignment.substr(0, eq);
  const std::string_view text = assignment.substr(eq + 1);
  for (const StepCostField& f : step_cost_fields()) {
    if (f.name != name) continue;
    double v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || !std::isfinite(v))
      throw Error(where + ": '" + std::string(text) + "' is not a number");
    const bool low = f.min_exclusive ? !(v > f.min) : !(v >= f.min);
    if (low || (f.max > 0 && v > f.max)) throw Error(where + ": " + std::string(name) + " must be " + range_of(f));
    costs.*f.member = v;
    return;
  }
  throw Error(where + ": unknown cost '" + std::string(name) + "' (known: " + known_costs() + ")");
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
