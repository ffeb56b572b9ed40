#pragma once
// Internal: one node of the machine as NCCL's topology code sees it (struct ncclTopoSystem in
// src/graph/topo.h): nodes GPU, PCI (switch), NVS, CPU, NIC and NET (the NIC's port), links
// with NCCL's bandwidth figures, and NCCL's paths between GPUs and NETs.
#include <cstdint>
#include <vector>

#include "colltune/sim/nccl_model.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim::nccl {

enum class NodeKind { gpu, pci, nvs, cpu, nic, net };
// Link types share NCCL's numbering with path types (LINK_LOC 0, NVL 1, C2C 3, PCI 4, SYS 9,
// NET 10), so a one-hop path's type is its link's type.
enum class LinkType { loc = 0, nvl = 1, c2c = 3, pci = 4, sys = 9, net = 10 };

// NCCL's LOC_BW: the bandwidth of a link that is not a bottleneck (GB/s).
inline constexpr float kLocBw = 5000.0f;

struct Link {
  int from = 0;
  int to = 0;
  LinkType type = LinkType::pci;
  float bw = 0;  // GB/s, this direction; the search subtracts what channels use
};

struct Node {
  NodeKind kind = NodeKind::gpu;
  int cc = 0;             // gpu: compute capability
  int index = 0;          // position among the nodes of its kind (GPU = local rank, NET = NIC index)
  std::vector<int> out;   // outgoing link ids
};

// A route from one node to another: links in order, its bottleneck and its NCCL type.
struct Path {
  std::vector<int> links;
  float bw = 0;
  NcclPath type = NcclPath::dis;
  int hops() const { return static_cast<int>(links.size()); }
};

// Every field is part of a channel search's memo key (search_key in nccl_search.cpp): a field
// added here must be appended there.
struct NodeGraph {
  std::vector<Node> nodes;
  std::vector<Link> links;
  std::vector<int> gpus;    // node id of local rank i
  std::vector<int> nets;    // node id of NET i (one per NIC)
  std::vector<float> net_bw;  // per NET: the NIC's speed (GB/s), decremented per channel by the search
  int nvs = -1;             // node id of the NVSwitch, -1 without one
  NcclCpu cpu = NcclCpu::intel_srp;
  // Paths [from][to]: GPU->GPU, GPU->NET (with PXN), NET->GPU, NVS<->GPU.
  std::vector<std::vector<Path>> gpu_gpu;
  std::vector<std::vector<Path>> gpu_net;
  std::vector<std::vector<Path>> net_gpu;
  std::vector<Path> nvs_gpu;
  std::vector<Path> gpu_nvs;
  std::vector<int> net_local_gpu;  // net.localGpu (-1: none)
  // Per GPU, the NICs it uses channel after channel (ncclTopoGetLocalNet for channels 0, 1,
  // ... until the first repeats); per NIC, the GPUs nearest to it (ncclTopoGetLocal).
  std::vector<std::vector<int>> gpu_nets;
  std::vector<std::vector<int>> net_near_gpus;

  std::vector<int> reverse;   // per link, the link back (-1: none)
  std::vector<int> gpu_pci;   // per GPU, its first PCIe link (-1: none)

  int num_gpus() const { return static_cast<int>(gpus.size()); }
  int num_nets() const { return static_cast<int>(nets.size()); }
  int reverse_link(int link) const { return reverse[static_cast<std::size_t>(link)]; }
};

// The node holding local ranks `ranks` (ranks of one node, in local order) of `topology`:
// their GPUs, the switches, CPUs and NICs of their host, joined as the topology joins them.
// With `with_nets` (more than one node), each NIC gets its NET port and paths to it.
// `cc_fallback` replaces a compute capability of 0. Throws colltune::Error when a GPU has no
// compute capability and no fallback is given.
NodeGraph build_node_graph(const topo::Topology& topology, const std::vector<int>& ranks, NcclCpu cpu,
                           bool with_nets, bool pxn, int cc_fallback);

// ncclTopoGetLocal: the indices of `row`'s targets nearest to its source (widest path, then
// best type), in index order.
std::vector<int> nearest(const std::vector<Path>& row);
// ncclTopoGetLocalNet: the NIC that GPU `gpu` uses for channel `channel`.
int local_net(const NodeGraph& g, int gpu, int channel);

// NCCL's inter-socket bandwidth for a CPU model (src/graph/topo.h).
float inter_cpu_bw(NcclCpu cpu);
bool is_amd(NcclCpu cpu);

}  // namespace colltune::sim::nccl
