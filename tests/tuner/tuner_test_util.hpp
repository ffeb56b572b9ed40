#pragma once
// Shared helpers for the tuner tests: hand-built clusters and cached tuning results.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/tuner.hpp"

namespace colltune::tuner::test {

// `hosts` hosts of `gpus` GPUs. Inside a host every GPU has a 450 GB/s NVLink port into an
// NVSwitch; the host reaches a core switch through one NIC of `nic_gbps` (PCIe 32 GB/s between
// NVSwitch and NIC). GPUs reduce at 1000 GB/s.
inline topo::Topology cluster(int hosts, int gpus, double nic_gbps) {
  using topo::DeviceKind;
  using topo::LinkKind;
  topo::Topology t;
  t.name = "cluster:" + std::to_string(hosts) + "x" + std::to_string(gpus) + "@" + std::to_string(nic_gbps);
  const auto core = t.add_device({"core", DeviceKind::net_switch, -1, 0});
  int rank = 0;
  for (int h = 0; h < hosts; ++h) {
    // Appended, not "h" + std::to_string(h): GCC 12 warns falsely (-Wrestrict, GCC bug 105651)
    // on a literal plus a temporary string where this is inlined.
    const std::string name = std::string("h").append(std::to_string(h));
    const std::string p = name + "/";
    const int host = t.add_host(name);
    const auto sw = t.add_device({p + "nvswitch", DeviceKind::nvswitch, host, 0});
    const auto nic = t.add_device({p + "nic", DeviceKind::nic, host, 0});
    t.add_duplex_link(sw, nic, LinkKind::pcie, 32.0, 1.0);
    t.add_duplex_link(nic, core, LinkKind::net, nic_gbps, 2.0);
    for (int g = 0; g < gpus; ++g) {
      const auto gpu = t.add_device({p + "gpu" + std::to_string(g), DeviceKind::gpu, host, 1000.0});
      t.add_duplex_link(gpu, sw, LinkKind::nvlink, 450.0, 0.5);
      t.map_rank(rank++, gpu);
    }
  }
  t.validate();
  return t;
}

inline TuneResult tune_analytic(const topo::Topology& topology, const sim::Workload& workload,
                                TuneOptions options = {}) {
  SimulatedObjective objective(topology, workload, sim::Engine::analytic);
  return tune(topology, workload, objective, options);
}

// The data lines of an emitted file (not blank, not a # comment).
inline std::vector<std::string> data_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.push_back(line);
  return out;
}

inline std::map<std::string, std::string> parse_env(const std::string& text) {
  std::map<std::string, std::string> env;
  const std::regex assignment("^([A-Z_][A-Z0-9_]*)=(\\S+)$");
  for (const auto& line : data_lines(text)) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, assignment)) << "not KEY=VALUE: " << line;
    env[m[1]] = m[2];
  }
  return env;
}

inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  return fields;
}

}  // namespace colltune::tuner::test
