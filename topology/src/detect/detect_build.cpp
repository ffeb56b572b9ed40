// build_detected_topology() (detect.hpp): host descriptions to one topology. Figures are rows of
// the hardware table (hardware.hpp): a GPU's by its board name where the table has it, else by
// its compute capability; CPUs and NICs whose figures cannot be read are the table's defaults
// (hw::kDefaultCpu, hw::kDefaultNic). `colltune calibrate` refines them.
//
// How `nvidia-smi topo -m` becomes a graph:
//  - GPUs and NICs that are PIX or PXB to each other share a PCIe switch (a pcie_switch device);
//    a lone one links straight to its socket;
//  - GPUs and NICs joined by PIX, PXB, PHB or NODE sit on one socket; the groups that SYS
//    separates are the sockets, in order (spread in blocks where the counts differ);
//  - NV# between GPUs: # NVLinks of the generation's per-link rate; where a GPU's counts add up
//    to more links than a GPU has, the GPUs are on an NVSwitch, one nvswitch device as the
//    presets have it, each GPU linked with its full count.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "colltune/common/error.hpp"
#include "colltune/topology/detect.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::topo {
namespace {

// Union-find over the matrix's GPUs then NICs.
struct Groups {
  std::vector<std::size_t> parent;
  explicit Groups(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  std::size_t find(std::size_t i) { return parent[i] == i ? i : parent[i] = find(parent[i]); }
  void join(std::size_t a, std::size_t b) { parent[find(a)] = find(b); }
};

Groups group_by(const GpuTopoMatrix& m, std::initializer_list<PathClass> classes) {
  Groups g(m.cells.size());
  for (std::size_t i = 0; i < m.cells.size(); ++i)
    for (std::size_t j = 0; j < m.cells.size(); ++j)
      if (std::find(classes.begin(), classes.end(), m.at(i, j).path) != classes.end()) g.join(i, j);
  return g;
}

// True when some GPU's NV# counts add up to more links than a GPU has: an NVSwitch.
bool on_nvswitch(const GpuTopoMatrix& m) {
  for (std::size_t i = 0; i < m.gpus.size(); ++i) {
    int total = 0;
    for (std::size_t j = 0; j < m.gpus.size(); ++j) total += m.at(i, j).nvlinks;
    if (total > max_nvlinks_per_gpu()) return true;
  }
  return false;
}

// Each matrix member's socket: the groups SYS separates, numbered in order of first member.
// NV# hides the PCIe class of a pair: direct NVLink (bridges, cube-mesh) joins GPUs of one
// socket's group; an NVSwitch joins every GPU, so there it says nothing.
std::vector<int> member_sockets(const GpuTopoMatrix& m, int sockets) {
  Groups g = on_nvswitch(m)
                 ? group_by(m, {PathClass::pix, PathClass::pxb, PathClass::phb, PathClass::node})
                 : group_by(m, {PathClass::pix, PathClass::pxb, PathClass::phb, PathClass::node, PathClass::nvlink});
  std::vector<std::size_t> roots;
  std::vector<std::size_t> index(m.cells.size());
  for (std::size_t i = 0; i < m.cells.size(); ++i) {
    const auto it = std::find(roots.begin(), roots.end(), g.find(i));
    index[i] = static_cast<std::size_t>(it - roots.begin());
    if (it == roots.end()) roots.push_back(g.find(i));
  }
  std::vector<int> out;
  for (std::size_t i : index) out.push_back(static_cast<int>(i * static_cast<std::size_t>(sockets) / roots.size()));
  return out;
}

// The hardware table's row of a GPU nvidia-smi reported.
const GpuSpec& row_of(const GpuInfo& gpu) {
  const GpuSpec* board = gpu_of_board(gpu.name);
  return board ? *board : gpu_of_compute_capability(gpu.compute_capability);
}

struct HostBuild {
  std::string prefix;
  int host = -1;
  std::vector<VertexId> sockets, gpus, ranks, nics;
  std::vector<double> nic_gbps;
};

void add_sockets(Topology& t, HostBuild& b, const HostDescription& d) {
  for (std::size_t s = 0; s < d.sockets.size(); ++s) {
    const CpuSpec& cpu = find_cpu(hw::kDefaultCpu);
    Device socket{b.prefix + "cpu" + std::to_string(s), DeviceKind::cpu, b.host, cpu.reduce_gbps()};
    const CpuSocket& probed = d.sockets[s];
    socket.nccl_cpu = nccl_cpu_of_cpuid(probed.vendor, probed.family, probed.model_number);
    b.sockets.push_back(t.add_device(std::move(socket)));
    for (std::size_t o = 0; o < s; ++o)
      t.add_duplex_link(b.sockets[o], b.sockets[s], LinkKind::sys, cpu.socket_link_gbps, hw::kSysLatencyUs);
  }
}

// CPU-only host: one cpu device per rank, sharing its socket's memory bandwidth with the
// socket's other ranks (reduce: reduce_gbps_of_memory; a shared-memory copy writes and reads
// each byte: / 2).
void add_cpu_ranks(Topology& t, HostBuild& b, const DetectedHost& h) {
  const int n = static_cast<int>(h.ranks.size());
  const int sockets = static_cast<int>(b.sockets.size());
  std::vector<int> socket(static_cast<std::size_t>(n));
  std::vector<int> on_socket(b.sockets.size(), 0);
  for (int k = 0; k < n; ++k) {
    const int bound = k < static_cast<int>(h.rank_sockets.size()) ? h.rank_sockets[static_cast<std::size_t>(k)] : -1;
    socket[static_cast<std::size_t>(k)] = bound >= 0 && bound < sockets ? bound : k * sockets / n;
    ++on_socket[static_cast<std::size_t>(socket[static_cast<std::size_t>(k)])];
  }
  for (int k = 0; k < n; ++k) {
    const auto s = static_cast<std::size_t>(socket[static_cast<std::size_t>(k)]);
    const double share = find_cpu(hw::kDefaultCpu).memory_gbps / on_socket[s];
    b.ranks.push_back(t.add_device(
        Device{b.prefix + "rank" + std::to_string(k), DeviceKind::cpu, b.host, reduce_gbps_of_memory(share)}));
    t.add_duplex_link(b.ranks.back(), b.sockets[s], LinkKind::shm, share / 2, hw::kShmLatencyUs);
  }
}

void add_nvlinks(Topology& t, HostBuild& b, const HostDescription& d) {
  const GpuTopoMatrix& m = d.matrix;
  const std::size_t g = m.gpus.size();
  std::vector<int> widest(g, 0);
  for (std::size_t i = 0; i < g; ++i)
    for (std::size_t j = 0; j < g; ++j) widest[i] = std::max(widest[i], m.at(i, j).nvlinks);
  auto rate = [&](std::size_t i) {
    const GpuSpec& row = row_of(d.gpus[i]);
    return row.nvlink.links > 0 ? row.nvlink.link_gbps : nvlink_link_gbps(row.compute_capability);
  };
  if (on_nvswitch(m)) {
    const bool nvls = d.gpus.front().compute_capability >= 90;  // NVLink SHARP: Hopper and later
    const VertexId sw = t.add_device(Device{b.prefix + "nvswitch", DeviceKind::nvswitch, b.host, 0, 0,
                                            nvls ? SwitchReduction::nvls : SwitchReduction::none});
    for (std::size_t i = 0; i < g; ++i)
      if (widest[i] > 0) t.add_duplex_link(b.gpus[i], sw, LinkKind::nvlink, widest[i] * rate(i), hw::kNvlinkLatencyUs);
    return;
  }
  for (std::size_t i = 0; i < g; ++i)
    for (std::size_t j = i + 1; j < g; ++j)
      if (m.at(i, j).nvlinks > 0)
        t.add_duplex_link(b.gpus[i], b.gpus[j], LinkKind::nvlink, m.at(i, j).nvlinks * std::min(rate(i), rate(j)),
                          hw::kNvlinkLatencyUs);
}

double nic_rate(const HostDescription& d, const std::string& name) {
  for (const NicInfo& n : d.nics)
    if (n.name == name && n.gbps > 0) return n.gbps;
  return find_nic(hw::kDefaultNic).gbps();
}

// GPUs and the matrix's NICs, behind PCIe switches or straight on their sockets.
void add_gpus(Topology& t, HostBuild& b, const HostDescription& d) {
  const GpuTopoMatrix& m = d.matrix;
  int pcie_gen = 0;  // the newest GPU's host interface
  for (const GpuInfo& gpu : d.gpus) pcie_gen = std::max(pcie_gen, row_of(gpu).pcie_gen);
  const double pcie = pcie_gbps(pcie_gen, 16);
  for (std::size_t i = 0; i < d.gpus.size(); ++i) {
    const int gcc = d.gpus[i].compute_capability;
    b.gpus.push_back(t.add_device(
        Device{b.prefix + "gpu" + std::to_string(i), DeviceKind::gpu, b.host, row_of(d.gpus[i]).reduce_gbps(), gcc}));
  }
  for (const std::string& name : m.nics) {
    b.nics.push_back(t.add_device(Device{b.prefix + name, DeviceKind::nic, b.host}));
    b.nic_gbps.push_back(nic_rate(d, name));
  }
  const std::vector<int> socket = member_sockets(m, static_cast<int>(b.sockets.size()));
  Groups sw = group_by(m, {PathClass::pix, PathClass::pxb});
  std::vector<std::size_t> size(m.cells.size(), 0);
  for (std::size_t i = 0; i < m.cells.size(); ++i) ++size[sw.find(i)];
  std::vector<VertexId> switch_of(m.cells.size(), kNoDevice);
  int switches = 0;
  for (std::size_t i = 0; i < m.cells.size(); ++i) {
    const VertexId member = i < b.gpus.size() ? b.gpus[i] : b.nics[i - b.gpus.size()];
    const VertexId up = b.sockets[static_cast<std::size_t>(socket[i])];
    const std::size_t root = sw.find(i);
    if (size[root] < 2) {
      t.add_duplex_link(member, up, LinkKind::pcie, pcie, hw::kPcieLatencyUs);
      continue;
    }
    if (switch_of[root] == kNoDevice) {
      switch_of[root] =
          t.add_device(Device{b.prefix + "pcie" + std::to_string(switches++), DeviceKind::pcie_switch, b.host});
      t.add_duplex_link(switch_of[root], up, LinkKind::pcie, pcie, hw::kPcieLatencyUs);
    }
    t.add_duplex_link(member, switch_of[root], LinkKind::pcie, pcie, hw::kPcieLatencyUs);
  }
  add_nvlinks(t, b, d);
}

// NICs sysfs found that the matrix does not list, on their sockets.
void add_other_nics(Topology& t, HostBuild& b, const HostDescription& d) {
  for (const NicInfo& n : d.nics) {
    if (std::find(d.matrix.nics.begin(), d.matrix.nics.end(), n.name) != d.matrix.nics.end()) continue;
    b.nics.push_back(t.add_device(Device{b.prefix + n.name, DeviceKind::nic, b.host}));
    b.nic_gbps.push_back(n.gbps > 0 ? n.gbps : find_nic(hw::kDefaultNic).gbps());
    const auto s =
        static_cast<std::size_t>(n.socket >= 0 && n.socket < static_cast<int>(b.sockets.size()) ? n.socket : 0);
    t.add_duplex_link(b.nics.back(), b.sockets[s], LinkKind::pcie, pcie_gbps(4, 16), hw::kPcieLatencyUs);
  }
}

HostBuild add_host(Topology& t, const DetectedHost& h) {
  const HostDescription& d = h.description;
  if (d.sockets.empty()) throw Error("host " + d.hostname + ": no CPU socket detected");
  if (d.matrix.gpus.size() != d.gpus.size())
    throw Error("host " + d.hostname + ": " + std::to_string(d.gpus.size()) + " GPUs but a topology matrix of " +
                std::to_string(d.matrix.gpus.size()));
  HostBuild b;
  b.prefix = d.hostname + "/";
  b.host = t.add_host(d.hostname);
  add_sockets(t, b, d);
  if (d.gpus.empty())
    add_cpu_ranks(t, b, h);
  else
    add_gpus(t, b, d);
  add_other_nics(t, b, d);
  const std::vector<VertexId>& devices = b.gpus.empty() ? b.ranks : b.gpus;
  for (std::size_t k = 0; k < h.ranks.size(); ++k) t.map_rank(h.ranks[k], devices[k % devices.size()]);
  return b;
}

// ib where every host has an InfiniBand port, roce where every host has an RDMA NIC, else tcp.
NetTransport transport_of(const std::vector<DetectedHost>& hosts) {
  int worst = 2;
  for (const DetectedHost& h : hosts) {
    int best = h.description.matrix.nics.empty() && h.description.nic_source != "/sys/class/infiniband" ? 0 : 1;
    for (const NicInfo& n : h.description.nics)
      if (n.link_layer == "InfiniBand") best = 2;
    worst = std::min(worst, best);
  }
  return worst == 2 ? NetTransport::ib : worst == 1 ? NetTransport::roce : NetTransport::tcp;
}

// One network switch outside the hosts; a host without a NIC gets a default one (said in the
// description).
void add_network(Topology& t, std::vector<HostBuild>& builds, std::string& notes) {
  const VertexId net = t.add_device(Device{"network", DeviceKind::net_switch, -1});
  for (HostBuild& b : builds) {
    if (b.nics.empty()) {
      b.nics.push_back(t.add_device(Device{b.prefix + "nic0", DeviceKind::nic, b.host}));
      const NicSpec& nic = find_nic(hw::kDefaultNic);
      b.nic_gbps.push_back(nic.gbps());
      t.add_duplex_link(b.nics.back(), b.sockets.front(), LinkKind::pcie, pcie_gbps(4, 16), hw::kPcieLatencyUs);
      notes += "; " + t.host_name(b.host) + ": no NIC found, assumed one of " + std::to_string(static_cast<int>(nic.gbit)) + " Gb/s";
    }
    for (std::size_t n = 0; n < b.nics.size(); ++n)
      t.add_duplex_link(b.nics[n], net, LinkKind::net, b.nic_gbps[n], hw::kNetLatencyUs);
  }
}

// The table's name of the GPU every host has, when nvidia-smi named one board the table knows
// on every host; empty otherwise (gpu_of() then goes by compute capability).
std::string common_gpu(const std::vector<DetectedHost>& hosts) {
  const GpuSpec* common = nullptr;
  for (const DetectedHost& h : hosts)
    for (const GpuInfo& gpu : h.description.gpus) {
      const GpuSpec* row = gpu_of_board(gpu.name);
      if (!row || (common && common != row)) return "";
      common = row;
    }
  return common ? common->name : "";
}

}  // namespace

Topology build_detected_topology(const std::vector<DetectedHost>& hosts) {
  if (hosts.empty()) throw Error("topo detect: no host to describe");
  Topology t;
  t.name = "detected";
  std::string notes;
  std::vector<HostBuild> builds;
  for (const DetectedHost& h : hosts) {
    if (h.ranks.empty()) throw Error("topo detect: host " + h.description.hostname + " has no rank");
    builds.push_back(add_host(t, h));
    const HostDescription& d = h.description;
    notes += "; " + d.hostname + ": CPUs " + d.cpu_source + ", GPUs " + d.gpu_source + ", NICs " + d.nic_source;
  }
  if (hosts.size() > 1) add_network(t, builds, notes);
  t.transport = transport_of(hosts);
  t.gpu = common_gpu(hosts);
  t.description = "detected; figures are defaults, calibrate them (colltune calibrate)" + notes;
  t.validate();
  return t;
}

}  // namespace colltune::topo
