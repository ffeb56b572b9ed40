#pragma once
// Internal: building blocks shared by the presets: a GPU server and a leaf/spine network.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "colltune/topology/hardware.hpp"
#include "colltune/topology/topology.hpp"
#include "presets/preset_params.hpp"

namespace colltune::topo::detail {

// One server. GPUs sit in pairs (gpus_per_switch) behind PCIe switches together with the
// NICs; switches hang off the CPUs in order; CPUs are joined pairwise by socket links.
// With nvswitch_gbps > 0 every GPU also links to one NVSwitch vertex at that rate: the host's
// NVSwitch chips act as one non-blocking crossbar, and NCCL spreads a GPU's traffic over all
// of them, so one aggregate vertex gives a single route the full per-GPU NVLink bandwidth.
struct HostPlan {
  int gpus = 8;
  double gpu_reduce_gbps = 0;
  int compute_capability = 0;  // of the GPUs (90 = H100)
  bool nvls = false;           // the NVSwitch reduces in the switch (NVLink SHARP, Hopper and later)
  double nvswitch_gbps = 0;  // per GPU per direction into the NVSwitch fabric; 0 = no switch
  int gpus_per_switch = 2;
  double pcie_gbps = 0;         // GPU/NIC <-> PCIe switch
  double pcie_uplink_gbps = 0;  // PCIe switch <-> CPU
  int cpus = 2;
  double cpu_reduce_gbps = 0;
  double sys_gbps = 0;
  std::optional<NcclCpu> nccl_cpu;  // the CPUs' class for NCCL's model
  int nics = 8;
  std::string gpu;  // the GPU generation (a gpu_table() name), recorded on the topology
};

// A plan of the hardware table's `gpu` (reduce rate, compute capability, PCIe Gen x16 of its
// host interface) in two sockets of `cpu` (reduce rate, socket links); the caller sets counts,
// NVLink and NICs.
HostPlan host_of(const GpuSpec& gpu, const CpuSpec& cpu);

struct HostDevices {
  int host = -1;
  std::vector<VertexId> gpus;
  std::vector<VertexId> nics;
};

// Adds host `name`'s devices and links; maps its GPUs to ranks first_rank, first_rank+1, ...
HostDevices add_server(Topology& t, const std::string& name, const HostPlan& plan, int first_rank);

// Two-level leaf/spine network. Each leaf takes `leaf_ports` NIC cables from whole hosts
// (leaf_ports / nics hosts per leaf, at least one; hosts fill leaves in order). With more than one
// leaf, the spine layer is one core vertex and each leaf's uplinks to it are one trunk of
// (down capacity / oversub) GB/s: ECMP spreads flows over all spine ports, so the trunk's
// bandwidth is what the leaf's flows share, and with oversub > 1 it is the bottleneck that
// cross-leaf traffic contends for.
struct NetworkPlan {
  double nic_gbps = 50;  // per NIC per direction
  int leaf_ports = 32;
  double oversub = 1;
  bool sharp = false;  // leaf and spine switches reduce in the network (SHARP: NCCL's CollNet)
};
void add_leaf_spine(Topology& t, const std::vector<HostDevices>& hosts, const NetworkPlan& plan);

// `nodes` (parameter) copies of `plan` named node0, node1, ... with ranks numbered host by
// host, `extra` adding links inside each; a leaf/spine network (parameters nic_gbit,
// leaf_ports, oversub, transport) joins their NICs when there is more than one node. All network
// parameters are read, and so checked, even for one node.
using ExtraLinks = std::function<void(Topology&, const HostDevices&)>;
Topology servers(const PresetParams& p, const HostPlan& plan, const ExtraLinks& extra = {});

// Hosts per leaf switch for `nics_per_host` NICs per host.
int hosts_per_leaf(int leaf_ports, int nics_per_host);

}  // namespace colltune::topo::detail
