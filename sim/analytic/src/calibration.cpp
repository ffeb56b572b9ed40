// The calibration object of a calibrated topology, as the models read it (calibration.hpp).
#include "colltune/sim/calibration.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include <nlohmann/json.hpp>

#include "colltune/common/error.hpp"

namespace colltune::sim {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const topo::Topology& t, const std::string& key, const std::string& what) {
  throw Error(t.name + ": calibration." + key + ": " + what);
}

double efficiency_of(const topo::Topology& t, const json& values, const char* key, double nominal) {
  const auto it = values.find(key);
  if (it == values.end()) return nominal;
  if (!it->is_number() || !(it->get<double>() > 0 && it->get<double>() <= 1))
    bad(t, std::string("values.") + key, "expected a payload fraction in (0, 1], got " + it->dump());
  return it->get<double>();
}

std::vector<std::pair<double, double>> measured_links_of(const topo::Topology& t, const json& j) {
  std::vector<std::pair<double, double>> out;
  const auto it = j.find("measured_links");
  if (it == j.end()) return out;
  if (!it->is_array() || it->size() != t.num_links())
    bad(t, "measured_links", "expected the " + std::to_string(t.num_links()) +
                                 " links' measured figures, got " + std::to_string(it->is_array() ? it->size() : 0) +
                                 " (a calibrated file used on another machine shape: calibrate on this machine)");
  for (const json& link : *it) {
    if (!link.is_array() || link.size() != 2 || !link[0].is_number() || !link[1].is_number() ||
        !(link[0].get<double>() > 0) || !(link[1].get<double>() >= 0))
      bad(t, "measured_links", "expected [GB/s > 0, us >= 0] per link, got " + link.dump());
    out.emplace_back(link[0].get<double>(), link[1].get<double>());
  }
  return out;
}

// The range of the fitted rows' message sizes ("rows"[].bytes), {0, 0} without rows. A row
// without a size is the file's fault.
std::pair<std::size_t, std::size_t> measured_bytes_of(const topo::Topology& t, const json& j) {
  const auto it = j.find("rows");
  if (it == j.end() || !it->is_array() || it->empty()) return {0, 0};
  std::size_t lo = SIZE_MAX, hi = 0;
  for (const json& row : *it) {
    const auto bytes = row.is_object() ? row.find("bytes") : row.end();
    if (!row.is_object() || bytes == row.end() || !bytes->is_number_unsigned())
      bad(t, "rows", "expected every row's \"bytes\" as a whole number, got " + row.dump().substr(0, 80));
    lo = std::min(lo, bytes->get<std::size_t>());
    hi = std::max(hi, bytes->get<std::size_t>());
  }
  return {lo, hi};
}

}  // namespace

CalibrationFacts calibration_facts(const topo::Topology& topology) {
  CalibrationFacts f;
  if (topology.calibration.empty()) return f;
  const json j = json::parse(topology.calibration, nullptr, false);
  if (!j.is_object()) bad(topology, "", "expected an object");
  f.calibrated = true;
  const auto nranks = j.find("nranks");
  f.nranks = nranks != j.end() && nranks->is_number_integer() ? nranks->get<int>() : topology.num_ranks();
  if (f.nranks != topology.num_ranks())
    bad(topology, "nranks", "fitted on " + std::to_string(f.nranks) + " ranks, the topology has " +
                                std::to_string(topology.num_ranks()) +
                                " (a calibrated file used on another machine shape: calibrate on this machine)");
  const auto values = j.find("values");
  if (values != j.end() && values->is_object()) {
    f.efficiency.ll = efficiency_of(topology, *values, "ll_efficiency", f.efficiency.ll);
    f.efficiency.ll128 = efficiency_of(topology, *values, "ll128_efficiency", f.efficiency.ll128);
  }
  f.measured_links = measured_links_of(topology, j);
  std::tie(f.measured_min_bytes, f.measured_max_bytes) = measured_bytes_of(topology, j);
  return f;
}

topo::Topology measured_machine(const topo::Topology& topology) {
  const CalibrationFacts f = calibration_facts(topology);
  topo::Topology t = topology;
  for (std::size_t i = 0; i < f.measured_links.size(); ++i)
    t.set_link_figures(i, f.measured_links[i].first, f.measured_links[i].second);
  return t;
}

}  // namespace colltune::sim
