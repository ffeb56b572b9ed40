// Fabric presets: a leaf/spine fat-tree of GPU servers, a 2-D/3-D torus of GPUs, and the
// textbook flat alpha-beta machine.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/topology/hardware.hpp"
#include "presets/preset_builders.hpp"
#include "presets/preset_hosts.hpp"

namespace colltune::topo::detail {
namespace {

// Row-major coordinates of torus vertex `index` (last dimension fastest).
std::vector<int> torus_coords(long index, const std::vector<int>& dims) {
  std::vector<int> c(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    c[d] = static_cast<int>(index % dims[d]);
    index /= dims[d];
  }
  return c;
}

long torus_index(const std::vector<int>& coords, const std::vector<int>& dims) {
  long index = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) index = index * dims[d] + coords[d];
  return index;
}

}  // namespace

// GPUs per PCIe switch of the GPU generation's reference server, for `nics` NICs on `gpus`
// GPUs: on Hopper and later as the DGX H100 (a NIC per switch with its GPU group, gpus/nics
// GPUs), before as the DGX A100 and the DGX-1 (two GPUs a switch, the NICs spread over the
// switches, or gpus/nics GPUs where there are fewer NICs). NCCL's channel search before
// sm90 needs a tree's first two GPUs near one NIC: a GPU alone on a switch with its NIC leaves
// it without trees, and then with a single channel (docs/topologies.md).
int reference_gpus_per_switch(const GpuSpec& gpu, int gpus, int nics) {
  const int per_nic = std::max(1, gpus / nics);
  return gpu.compute_capability >= 90 ? per_nic : std::max(2, per_nic);
}

// Servers like a DGX H100 (per-GPU NVSwitch bandwidth `nvlink`, `cpu` CPUs (Xeon 8480C); the GPU
// generation `gpu` (default h100) sets the compute capability, reduce rate and PCIe generation;
// `per_switch` GPUs share a PCIe switch, the NICs spread over the switches; 0 = the
// generation's reference server) with `nics` NICs of `nic_gbit` each, on leaf switches of
// `leaf_ports` NIC ports (a 64-port NVIDIA Quantum-2 QM9700 has 64 x 400 Gb/s ports: 32 down,
// 32 up when non-blocking) joined by a spine; `oversub` thins each leaf's uplink trunk.
Topology build_fat_tree(const PresetParams& p) {
  const GpuSpec& gpu = p.gpu();
  HostPlan plan = host_of(gpu, p.cpu());
  plan.gpus = p.integer("gpus", 1, 1024);
  plan.nics = p.integer("nics", 1, 1024);
  const int per_switch = p.integer("per_switch", 0, 1024);
  plan.gpus_per_switch = per_switch > 0 ? per_switch : reference_gpus_per_switch(gpu, plan.gpus, plan.nics);
  plan.nvswitch_gbps = p.non_negative("nvlink");
  // NVLink SHARP: an NVSwitch of Hopper and later.
  plan.nvls = p.nvls(plan.nvswitch_gbps > 0 && gpu.compute_capability >= 90,
                     plan.nvswitch_gbps > 0 ? "NVLink SHARP needs the NVSwitch of Hopper or later (gpu=" + gpu.name + ")"
                                            : "NVLink SHARP needs an NVSwitch (nvlink=0)");
  return servers(p, plan);
}

// dims GPUs in a torus: each GPU links to its +1 neighbour in every dimension (wrapping), so
// every GPU has 2 links per dimension (1 when that dimension has size 2, none for size 1).
// Default link: one NVLink4 link, 25 GB/s per direction. Links inside a host are nvlink,
// links between hosts net.
Topology build_torus(const PresetParams& p) {
  const std::vector<int> dims = p.dims("dims");
  const double bw = p.number("bw", 0);
  const double lat = p.non_negative("lat");
  const double reduce = p.non_negative("reduce");  // 0: reductions cost nothing, as in the JSON format
  const long total = std::accumulate(dims.begin(), dims.end(), 1L, std::multiplies<long>());
  const int per_host = p.integer("per_host", 1, 1 << 16);
  if (total > limits::kMaxTopologyRanks)
    limits::exceeded("preset torus: dims make " + std::to_string(total) + " GPUs",
                     std::to_string(limits::kMaxTopologyRanks) + " ranks", limits::kTopologySizeReason);
  if (total % per_host != 0)
    throw Error("preset torus: per_host=" + std::to_string(per_host) + " does not divide the " + std::to_string(total) +
                " GPUs");
  Topology t;
  std::vector<VertexId> gpu;
  for (long i = 0; i < total; ++i) {
    const int host = static_cast<int>(i / per_host);
    if (i % per_host == 0) t.add_host("node" + std::to_string(host));
    gpu.push_back(t.add_device(Device{"node" + std::to_string(host) + "/gpu" + std::to_string(i % per_host),
                                      DeviceKind::gpu, host, reduce}));
    t.map_rank(static_cast<int>(i), gpu.back());
  }
  for (long i = 0; i < total; ++i) {
    const std::vector<int> c = torus_coords(i, dims);
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1 || (dims[d] == 2 && c[d] == 1)) continue;  // size 2: one link per pair
      std::vector<int> n = c;
      n[d] = (c[d] + 1) % dims[d];
      const long j = torus_index(n, dims);
      const LinkKind kind = i / per_host == j / per_host ? LinkKind::nvlink : LinkKind::net;
      t.add_duplex_link(gpu[static_cast<std::size_t>(i)], gpu[static_cast<std::size_t>(j)], kind, bw, lat);
    }
  }
  return t;
}

// The alpha-beta machine of the textbook cost formulas: `ranks` devices, each linked to one
// non-blocking crossbar at bandwidth bw and latency alpha/2 per direction, so every rank pair
// is exactly alpha us and bw GB/s apart and no two pairs share a link.
Topology build_flat(const PresetParams& p) {
  const int ranks = p.integer("ranks", 1, limits::kMaxTopologyRanks);
  const double alpha = p.non_negative("alpha");
  const double bw = p.number("bw", 0);
  const double reduce = p.non_negative("reduce");  // 0: reductions cost nothing, as in the JSON format
  const int nodes = p.integer("nodes", 1, 1 << 20);
  if (ranks % nodes != 0)
    throw Error("preset flat: nodes=" + std::to_string(nodes) + " does not divide ranks=" + std::to_string(ranks));
  const int per_host = ranks / nodes;
  Topology t;
  for (int h = 0; h < nodes; ++h) t.add_host("node" + std::to_string(h));
  const VertexId crossbar = t.add_device(Device{"crossbar", DeviceKind::net_switch, -1, 0});
  for (int r = 0; r < ranks; ++r) {
    const int host = r / per_host;
    const VertexId v = t.add_device(Device{"node" + std::to_string(host) + "/rank" + std::to_string(r), DeviceKind::gpu, host, reduce});
    t.add_duplex_link(v, crossbar, LinkKind::net, bw, alpha / 2);
    t.map_rank(r, v);
  }
  return t;
}

}  // namespace colltune::topo::detail
