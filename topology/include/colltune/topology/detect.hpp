#pragma once
// `colltune topo detect`: the machines of the current job as a topology, the starting point for
// calibration (docs/topologies.md, "Detecting a topology").
//
// Three layers, so that each can be tested alone:
//  - parsers, pure functions over text: `nvidia-smi topo -m` and `nvidia-smi --query-gpu=...`;
//  - probes of this machine: CPU sockets and cores (hwloc, or /proc/cpuinfo and sysfs), NICs
//    (sysfs), GPUs (nvidia-smi, run with a timeout), gathered into a HostDescription that
//    travels as JSON between MPI ranks;
//  - the builder: host descriptions and their rank counts to one Topology whose figures are
//    documented defaults (hw_figures.hpp) for `colltune calibrate` to refine.
#include <string>
#include <string_view>
#include <vector>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

// ---- nvidia-smi ---------------------------------------------------------------------------

// One cell of `nvidia-smi topo -m`: how two devices are connected.
enum class PathClass {
  self,     // X
  nvlink,   // NV#: a bonded set of # NVLinks
  pix,      // at most one PCIe bridge (the same PCIe switch)
  pxb,      // several PCIe bridges, no host bridge
  phb,      // through a PCIe host bridge (the CPU)
  node,     // between host bridges of one NUMA node
  sys,      // across the SMP interconnect between NUMA nodes (QPI/UPI/xGMI); SOC in old versions
  unknown,  // not in the output (NIC to NIC where the matrix has no NIC rows)
};
std::string_view to_string(PathClass path);

struct PathCell {
  PathClass path = PathClass::unknown;
  int nvlinks = 0;  // nvlink: the # of NV#
};

// The matrix: GPUs first, then NICs, each row and column in that order.
struct GpuTopoMatrix {
  std::vector<std::string> gpus;             // "GPU0", "GPU1", ...
  std::vector<std::string> nics;             // NIC device names ("mlx5_0"), from the NIC legend where there is one
  std::vector<std::vector<PathCell>> cells;  // [i][j], i, j over gpus then nics
  const PathCell& at(std::size_t i, std::size_t j) const { return cells.at(i).at(j); }
};

// Parses `nvidia-smi topo -m` as it prints it (tab or space separated, with or without the
// terminal's underline escapes, NIC columns named NICn with a "NIC Legend" or named mlx5_n
// directly). Throws colltune::Error "SOURCE: line N: problem" for output it cannot read.
GpuTopoMatrix parse_nvidia_smi_topo(std::string_view text, const std::string& source);

struct GpuInfo {
  std::string name;            // "NVIDIA H100 80GB HBM3"
  std::string bus_id;          // "00000000:18:00.0"
  int compute_capability = 0;  // x10 + minor; 0 = nvidia-smi did not say
};

// Parses `nvidia-smi --query-gpu=name,pci.bus_id,compute_cap --format=csv,noheader`, one GPU a
// line. Throws colltune::Error "SOURCE: line N: problem".
std::vector<GpuInfo> parse_nvidia_smi_gpus(std::string_view text, const std::string& source);

// ---- what one host reports ------------------------------------------------------------------

struct CpuSocket {
  int cores = 0;      // physical cores
  std::string model;  // "AMD EPYC 7742 64-Core Processor"; may be empty
  // CPUID, as /proc/cpuinfo and hwloc give it: "GenuineIntel" / "AuthenticAMD" (empty: unknown),
  // family and model numbers. The topology's CPU class for NCCL's model comes from them.
  std::string vendor{};
  int family = 0;
  int model_number = 0;
};

struct NicInfo {
  std::string name;        // "mlx5_0", "eth0"
  double gbps = 0;         // per direction, GB/s; 0 = unknown (the builder's default)
  int socket = -1;         // the socket it hangs off; -1 = unknown
  std::string link_layer;  // "InfiniBand", "Ethernet"; empty = unknown
};

struct HostDescription {
  std::string hostname;
  std::vector<CpuSocket> sockets;  // at least one
  std::string cpu_source;          // "hwloc 2.9.0", "/proc/cpuinfo + sysfs (built without hwloc)"
  std::vector<GpuInfo> gpus;
  GpuTopoMatrix matrix;       // empty when there are no GPUs
  std::string gpu_source;     // "nvidia-smi", "none: nvidia-smi not found", ...
  std::vector<NicInfo> nics;  // from sysfs (their rates), matched to the matrix's NIC names
  std::string nic_source;
  std::vector<std::string> warnings;
};

std::string to_json(const HostDescription& host);
HostDescription host_description_from_json(std::string_view text, const std::string& source);

// The CPU sockets of this machine and where the figures came from.
struct CpuProbe {
  std::vector<CpuSocket> sockets;  // at least one
  std::string source;
};
// hwloc where colltune was built with it, else probe_cpus_sysfs().
CpuProbe probe_cpus();
// /sys/devices/system/cpu/cpuN/topology (packages, core ids) and /proc/cpuinfo (model name).
CpuProbe probe_cpus_sysfs();
bool built_with_hwloc();

// The NICs: RDMA devices of /sys/class/infiniband (rate, link layer, NUMA node); where there
// are none, the physical Ethernet interfaces of /sys/class/net that are up.
struct NicProbe {
  std::vector<NicInfo> nics;
  std::string source;
};
NicProbe probe_nics();

// Where detect_host() takes GPU facts from: nvidia-smi on this machine, or captured outputs.
struct GpuProbe {
  std::string topo_file;   // `nvidia-smi topo -m` saved to a file; empty: run nvidia-smi
  std::string query_file;  // `nvidia-smi --query-gpu=name,pci.bus_id,compute_cap --format=csv,noheader`
  double timeout_s = 30;   // per nvidia-smi run
};

// This machine: hostname, sockets and cores, NICs, GPUs. nvidia-smi missing, or failing, leaves
// the host without GPUs and says why in gpu_source / warnings; output it runs but cannot parse
// is an error (a topology that silently lost its GPUs would mislead every prediction).
HostDescription detect_host(const GpuProbe& probe);

// The socket (index into HostDescription::sockets) every CPU this process may run on belongs
// to, or -1 when they span several sockets or it cannot tell.
int socket_of_this_process();

// ---- the topology ---------------------------------------------------------------------------

// One host of the job and the ranks that run there.
struct DetectedHost {
  HostDescription description;
  std::vector<int> ranks;         // the global ranks on this host, in local order
  std::vector<int> rank_sockets;  // per local rank: its socket, -1 = unknown (then spread in blocks)
};

// Builds the topology: per host its CPU sockets (cpu devices joined by sys links), its GPUs
// (NVSwitch, NVLink, PCIe switches as nvidia-smi shows them) or, without GPUs, one cpu device per
// rank linked by shm to its socket; its NICs; a net_switch "network" joining the hosts' NICs when
// there is more than one host. Rank r maps to its host's local rank k: GPU k (mod the GPU count)
// or the k-th rank device. Validated. Throws colltune::Error.
Topology build_detected_topology(const std::vector<DetectedHost>& hosts);

}  // namespace colltune::topo
