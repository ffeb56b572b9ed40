// One node of the machine in NCCL's terms: which devices, which links, at which bandwidth.
//
// NCCL reads its link figures from the hardware (src/graph/topo.cc, topo.h), not from data
// sheets, so colltune's nominal figures are converted here:
//  - NVLink: colltune gives a bandwidth per GPU pair or GPU-NVSwitch pair at the data-sheet
//    rate per link (topo::nvlink_link_gbps, the hardware table's); the link count is that
//    bandwidth over the rate, and NCCL's figure is the count
//    times its per-link rate (ncclTopoNVLinkBw: SM60 18, SM70 20, SM80 20, SM86 12, SM90 20.6,
//    SM100 40.1). DGX H100: 18 links x 20.6 = 370.8 GB/s per GPU.
//  - PCIe: colltune's bandwidth is the link rate after encoding; the generation and width are
//    recovered from it and NCCL's figure is width x (15, 30, 60, 120, 240, 480 for Gen1..6)/80
//    (kvDictPciGen): x16 Gen3 12, Gen4 24, Gen5 48 GB/s. A bandwidth that is no standard
//    generation and width is scaled by NCCL's Gen3-5 ratio (0.75 of the raw rate).
//  - CPU socket links: NCCL uses a fixed figure per CPU model (NcclCpu), whatever the cable.
//  - NICs: the speed of the NIC's network link (NCCL: Mb/s / 8000, the same GB/s).
#include "nccl_topo.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::sim::nccl {
namespace {

// ncclTopoNVLinkBw (src/graph/topo.h).
float nccl_nvlink_gbps(int cc) {
  if (cc >= 100) return 40.1f;
  if (cc >= 90) return 20.6f;
  if (cc == 86) return 12.0f;
  if (cc >= 70) return 20.0f;
  if (cc >= 60) return 18.0f;
  return 20.0f;
}

float nccl_pcie_gbps(double gbps) {
  static constexpr int kNcclPerLane[] = {15, 30, 60, 120, 240, 480};  // kvDictPciGen, x100 Mb/s, Gen1..6
  for (int gen = 1; gen <= static_cast<int>(std::size(kNcclPerLane)); ++gen) {
    for (int width : {16, 8, 4, 2, 1, 32}) {
      const double rate = topo::pcie_gbps(gen, width);
      if (std::abs(rate - gbps) <= 1e-3 * gbps) return static_cast<float>(width * kNcclPerLane[gen - 1] / 80.0);
    }
  }
  return static_cast<float>(gbps * 0.75 * 130.0 / 128.0);
}

NodeKind kind_of(topo::DeviceKind kind) {
  switch (kind) {
    case topo::DeviceKind::gpu: return NodeKind::gpu;
    case topo::DeviceKind::nvswitch: return NodeKind::nvs;
    case topo::DeviceKind::pcie_switch: return NodeKind::pci;
    case topo::DeviceKind::cpu: return NodeKind::cpu;
    case topo::DeviceKind::nic: return NodeKind::nic;
    case topo::DeviceKind::net_switch: break;
  }
  return NodeKind::net;
}

class Builder {
 public:
  Builder(const topo::Topology& t, NcclCpu cpu, int cc_fallback) : t_(t), cc_fallback_(cc_fallback) { g_.cpu = cpu; }

  NodeGraph build(const std::vector<int>& ranks, bool with_nets) {
    add_devices(ranks);
    add_internal_links();
    if (with_nets) add_nets();
    sort_links();
    index_links();
    return std::move(g_);
  }

 private:
  const topo::Topology& t_;
  int cc_fallback_;
  NodeGraph g_;
  std::map<topo::VertexId, int> node_of_;  // included device -> node id
  std::map<std::pair<int, int>, int> link_of_;  // (from, to) -> link id, to merge parallel edges

  int add_node(NodeKind kind, int cc, int index) {
    g_.nodes.push_back(Node{kind, cc, index, {}});
    return static_cast<int>(g_.nodes.size()) - 1;
  }

  int gpu_cc(const topo::Device& d) const {
    if (d.compute_capability > 0) return d.compute_capability;
    if (cc_fallback_ > 0) return cc_fallback_;
    throw Error("NCCL's model needs the GPUs' compute capability; device '" + d.id +
                "' has none (give it in the topology or as the model's compute_capability option)");
  }

  // The ranks' GPUs in local order, then every other device of their host except GPUs that
  // are not in the communicator (NCCL's topology holds only the communicator's GPUs).
  void add_devices(const std::vector<int>& ranks) {
    for (int r : ranks) {
      const topo::VertexId v = t_.device_of_rank(r);
      if (node_of_.count(v)) throw Error("NCCL's model: two ranks on one device ('" + t_.device(v).id + "')");
      node_of_[v] = add_node(NodeKind::gpu, gpu_cc(t_.device(v)), static_cast<int>(g_.gpus.size()));
      g_.gpus.push_back(node_of_[v]);
    }
    const int host = t_.host_of_rank(ranks.front());
    for (topo::VertexId v = 0; v < t_.num_devices(); ++v) {
      const topo::Device& d = t_.device(v);
      if (d.host != host || d.kind == topo::DeviceKind::gpu || d.kind == topo::DeviceKind::net_switch) continue;
      const NodeKind kind = kind_of(d.kind);
      node_of_[v] = add_node(kind, 0, 0);
      if (kind == NodeKind::nvs && g_.nvs < 0) g_.nvs = node_of_[v];
    }
  }

  float nccl_bw(const topo::Link& link, int a, int b) const {
    switch (link.kind) {
      case topo::LinkKind::nvlink: {
        const int cc = g_.nodes[static_cast<std::size_t>(a)].kind == NodeKind::gpu ? g_.nodes[static_cast<std::size_t>(a)].cc
                                                                                     : g_.nodes[static_cast<std::size_t>(b)].cc;
        const double count = std::max(1.0, std::round(link.bandwidth_gbps / topo::nvlink_link_gbps(cc)));
        return static_cast<float>(count) * nccl_nvlink_gbps(cc);
      }
      case topo::LinkKind::pcie: return nccl_pcie_gbps(link.bandwidth_gbps);
      case topo::LinkKind::sys:
      case topo::LinkKind::shm: return inter_cpu_bw(g_.cpu);
      case topo::LinkKind::net: break;
    }
    return 0;
  }

  static LinkType type_of(topo::LinkKind kind) {
    return kind == topo::LinkKind::nvlink ? LinkType::nvl : kind == topo::LinkKind::pcie ? LinkType::pci : LinkType::sys;
  }

  void connect(int from, int to, LinkType type, float bw) {
    const auto key = std::make_pair(from, to);
    if (auto it = link_of_.find(key); it != link_of_.end()) {  // NCCL aggregates parallel links
      g_.links[static_cast<std::size_t>(it->second)].bw += bw;
      return;
    }
    g_.links.push_back(Link{from, to, type, bw});
    const int id = static_cast<int>(g_.links.size()) - 1;
    link_of_[key] = id;
    g_.nodes[static_cast<std::size_t>(from)].out.push_back(id);
  }

  void add_internal_links() {
    for (const auto& [v, a] : node_of_) {
      for (std::size_t l : t_.out_links(v)) {
        const auto it = node_of_.find(t_.link_target(l));
        const topo::Link& link = t_.link(l);
        if (it == node_of_.end() || link.kind == topo::LinkKind::net) continue;
        connect(a, it->second, type_of(link.kind), nccl_bw(link, a, it->second));
      }
    }
  }

  // A NET port per NIC at the NIC's network speed; a GPU with network links of its own (the
  // flat and torus presets) gets one NIC per such link, attached without a bottleneck.
  void add_nets() {
    for (const auto& [v, a] : node_of_) {
      const NodeKind kind = g_.nodes[static_cast<std::size_t>(a)].kind;
      if (kind != NodeKind::nic && kind != NodeKind::gpu) continue;
      for (std::size_t l : t_.out_links(v)) {
        const topo::Link& link = t_.link(l);
        if (link.kind != topo::LinkKind::net || node_of_.count(t_.link_target(l))) continue;
        int nic = a;
        if (kind == NodeKind::gpu) {
          nic = add_node(NodeKind::nic, 0, 0);
          connect(a, nic, LinkType::pci, kLocBw);
          connect(nic, a, LinkType::pci, kLocBw);
        }
        add_net(nic, static_cast<float>(link.bandwidth_gbps));
        if (kind == NodeKind::nic) break;  // one port per NIC
      }
    }
  }

  // ncclTopoConnectNodes keeps each node's links sorted by bandwidth, highest first; the path
  // search visits them in that order.
  void sort_links() {
    for (Node& n : g_.nodes)
      std::stable_sort(n.out.begin(), n.out.end(), [&](int a, int b) {
        return g_.links[static_cast<std::size_t>(a)].bw > g_.links[static_cast<std::size_t>(b)].bw;
      });
  }

  // Each link's reverse and each GPU's PCIe link, looked up on every step of the search.
  void index_links() {
    g_.reverse.assign(g_.links.size(), -1);
    for (std::size_t id = 0; id < g_.links.size(); ++id) {
      const Link& l = g_.links[id];
      for (int back : g_.nodes[static_cast<std::size_t>(l.to)].out) {
        const Link& b = g_.links[static_cast<std::size_t>(back)];
        if (b.to == l.from && b.type == l.type) g_.reverse[id] = back;
      }
    }
    for (int gpu : g_.gpus) {
      int pci = -1;
      for (int id : g_.nodes[static_cast<std::size_t>(gpu)].out)
        if (pci < 0 && g_.links[static_cast<std::size_t>(id)].type == LinkType::pci) pci = id;
      g_.gpu_pci.push_back(pci);
    }
  }

  void add_net(int nic, float bw) {
    const int net = add_node(NodeKind::net, 0, static_cast<int>(g_.nets.size()));
    g_.nets.push_back(net);
    g_.net_bw.push_back(bw);
    connect(nic, net, LinkType::net, bw);
    connect(net, nic, LinkType::net, bw);
  }
};

}  // namespace

float inter_cpu_bw(NcclCpu cpu) {
  switch (cpu) {
    case NcclCpu::intel_bdw: return 6.0f;
    case NcclCpu::intel_skl: return 10.0f;
    case NcclCpu::intel_srp: return 22.0f;
    case NcclCpu::intel_erp: return 40.0f;
    case NcclCpu::amd: return 16.0f;
    case NcclCpu::amd_zen34: return 24.0f;
    case NcclCpu::amd_zen5: return 32.0f;
  }
  return 6.0f;
}

bool is_amd(NcclCpu cpu) { return cpu == NcclCpu::amd || cpu == NcclCpu::amd_zen34 || cpu == NcclCpu::amd_zen5; }

void compute_paths(NodeGraph& g, bool pxn);  // nccl_paths.cpp

NodeGraph build_node_graph(const topo::Topology& topology, const std::vector<int>& ranks, NcclCpu cpu,
                           bool with_nets, bool pxn, int cc_fallback) {
  if (ranks.empty()) throw Error("NCCL's model: a node without ranks");
  NodeGraph g = Builder(topology, cpu, cc_fallback).build(ranks, with_nets);
  compute_paths(g, pxn);
  return g;
}

}  // namespace colltune::sim::nccl
