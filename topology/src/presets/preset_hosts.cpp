// Server and leaf/spine network builders used by the presets (see preset_hosts.hpp).
#include "presets/preset_hosts.hpp"

#include <algorithm>
#include <optional>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"

namespace colltune::topo::detail {
namespace {

// Index of the PCIe switch that holds item `i` of `count` when `switches` switches share them
// evenly (GPU 2k and 2k+1 on switch k; NIC n on switch n * switches / nics).
int spread(int i, int count, int switches) { return static_cast<int>(static_cast<long>(i) * switches / count); }

VertexId add(Topology& t, std::string id, DeviceKind kind, int host, double reduce = 0) {
  return t.add_device(Device{std::move(id), kind, host, reduce});
}

}  // namespace

HostPlan host_of(const GpuSpec& gpu, const CpuSpec& cpu) {
  HostPlan plan;
  plan.gpu = gpu.name;
  plan.gpu_reduce_gbps = gpu.reduce_gbps();
  plan.compute_capability = gpu.compute_capability;
  plan.pcie_gbps = plan.pcie_uplink_gbps = pcie_gbps(gpu.pcie_gen, 16);
  plan.cpus = 2;
  plan.cpu_reduce_gbps = cpu.reduce_gbps();
  plan.sys_gbps = cpu.socket_link_gbps;
  plan.nccl_cpu = cpu.nccl_cpu;
  return plan;
}

HostDevices add_server(Topology& t, const std::string& name, const HostPlan& p, int first_rank) {
  HostDevices out;
  out.host = t.add_host(name);
  const std::string prefix = name + "/";
  std::vector<VertexId> cpus;
  for (int c = 0; c < p.cpus; ++c) {
    Device cpu{prefix + "cpu" + std::to_string(c), DeviceKind::cpu, out.host, p.cpu_reduce_gbps};
    cpu.nccl_cpu = p.nccl_cpu;
    cpus.push_back(t.add_device(std::move(cpu)));
    for (int o = 0; o < c; ++o) t.add_duplex_link(cpus[o], cpus[c], LinkKind::sys, p.sys_gbps, hw::kSysLatencyUs);
  }
  const int switches = std::max(1, (p.gpus + p.gpus_per_switch - 1) / p.gpus_per_switch);
  std::vector<VertexId> sw;
  for (int s = 0; s < switches; ++s) {
    sw.push_back(add(t, prefix + "pcie" + std::to_string(s), DeviceKind::pcie_switch, out.host));
    t.add_duplex_link(sw.back(), cpus[spread(s, switches, p.cpus)], LinkKind::pcie, p.pcie_uplink_gbps,
                      hw::kPcieLatencyUs);
  }
  std::optional<VertexId> nvswitch;
  if (p.nvswitch_gbps > 0) {
    nvswitch = t.add_device(Device{prefix + "nvswitch", DeviceKind::nvswitch, out.host, 0, 0,
                                   p.nvls ? SwitchReduction::nvls : SwitchReduction::none});
  }
  for (int g = 0; g < p.gpus; ++g) {
    out.gpus.push_back(t.add_device(
        Device{prefix + "gpu" + std::to_string(g), DeviceKind::gpu, out.host, p.gpu_reduce_gbps, p.compute_capability}));
    t.add_duplex_link(out.gpus.back(), sw[g / p.gpus_per_switch], LinkKind::pcie, p.pcie_gbps, hw::kPcieLatencyUs);
    if (nvswitch) t.add_duplex_link(out.gpus.back(), *nvswitch, LinkKind::nvlink, p.nvswitch_gbps, hw::kNvlinkLatencyUs);
    t.map_rank(first_rank + g, out.gpus.back());
  }
  for (int n = 0; n < p.nics; ++n) {
    out.nics.push_back(add(t, prefix + "nic" + std::to_string(n), DeviceKind::nic, out.host));
    t.add_duplex_link(out.nics.back(), sw[spread(n, p.nics, switches)], LinkKind::pcie, p.pcie_gbps,
                      hw::kPcieLatencyUs);
  }
  return out;
}

Topology servers(const PresetParams& p, const HostPlan& plan, const ExtraLinks& extra) {
  const int nodes = p.integer("nodes", 1, 1 << 16);
  // Refused before anything is built: the builder would only hit the limit after seconds.
  if (static_cast<long long>(nodes) * plan.gpus > limits::kMaxTopologyRanks)
    limits::exceeded("preset: nodes=" + std::to_string(nodes) + " x " + std::to_string(plan.gpus) + " GPUs = " +
                         std::to_string(static_cast<long long>(nodes) * plan.gpus) + " ranks",
                     std::to_string(limits::kMaxTopologyRanks) + " ranks", limits::kTopologySizeReason);
  const NetworkPlan net{p.number("nic_gbit", 0) / 8.0, p.integer("leaf_ports", 1, 1 << 16), p.number("oversub", 0),
                        p.integer("sharp", 0, 1) == 1};
  Topology t;
  t.gpu = plan.gpu;
  t.transport = p.transport();
  std::vector<HostDevices> hosts;
  for (int n = 0; n < nodes; ++n) {
    hosts.push_back(add_server(t, "node" + std::to_string(n), plan, n * plan.gpus));
    if (extra) extra(t, hosts.back());
  }
  if (nodes > 1) add_leaf_spine(t, hosts, net);
  return t;
}

int hosts_per_leaf(int leaf_ports, int nics_per_host) { return std::max(1, leaf_ports / std::max(1, nics_per_host)); }

void add_leaf_spine(Topology& t, const std::vector<HostDevices>& hosts, const NetworkPlan& p) {
  if (hosts.empty()) return;
  const int nics = static_cast<int>(hosts.front().nics.size());
  if (nics == 0) throw Error("a multi-node machine needs at least one NIC per host (nics=0)");
  const int per_leaf = hosts_per_leaf(p.leaf_ports, nics);
  const int leaves = (static_cast<int>(hosts.size()) + per_leaf - 1) / per_leaf;
  std::vector<VertexId> leaf;
  const SwitchReduction reduction = p.sharp ? SwitchReduction::sharp : SwitchReduction::none;
  for (int l = 0; l < leaves; ++l)
    leaf.push_back(t.add_device(Device{"leaf" + std::to_string(l), DeviceKind::net_switch, -1, 0, 0, reduction}));
  for (std::size_t h = 0; h < hosts.size(); ++h)
    for (VertexId nic : hosts[h].nics)
      t.add_duplex_link(nic, leaf[h / static_cast<std::size_t>(per_leaf)], LinkKind::net, p.nic_gbps, hw::kNetLatencyUs);
  if (leaves == 1) return;
  const VertexId spine = t.add_device(Device{"spine", DeviceKind::net_switch, -1, 0, 0, reduction});
  const double trunk = per_leaf * nics * p.nic_gbps / p.oversub;  // a leaf's down capacity / oversub
  for (VertexId l : leaf) t.add_duplex_link(l, spine, LinkKind::net, trunk, hw::kNetLatencyUs);
}

}  // namespace colltune::topo::detail
