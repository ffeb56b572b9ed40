// NCCL's paths inside one node (src/graph/paths.cc, ncclTopoComputePaths):
//  1. From every GPU, NET and NVSwitch, a breadth-first search sets the path from every node
//     to it: a path replaces the one found so far when it is wider, and either none was found
//     yet or the new one has fewer hops. A path may pass through a GPU only as one NVLink hop.
//     Its type is the worst of its hops: NVL for NVLink, NVB for NVLink through a GPU, PIX for
//     one PCIe switch, PXB for several, PHB through a CPU, SYS across CPUs.
//  2. GPU pairs farther apart than PXB do not use peer-to-peer (NCCL's default P2P level;
//     AMD machines with two GPUs allow SYS): their traffic goes through the CPU next to the
//     receiving GPU.
//  3. PXN: a GPU reaches a NIC through the NVLink peer that is the NIC's local GPU when that
//     peer is at most PXB from the NIC and the GPU's own path is narrower or crosses a CPU.
//  4. Each NIC's local GPU (ncclTopoGetLocalGpu): among the GPUs nearest to it, the one whose
//     own NIC choice (ncclTopoGetLocalNet, by device index, bit-mirrored) is this NIC.
// GPU Direct RDMA is assumed wherever the path is PXB or better.
#include <algorithm>
#include <deque>

#include "nccl_topo.hpp"

namespace colltune::sim::nccl {
namespace {

using PathList = std::vector<Path>;

NcclPath as_path(LinkType t) { return static_cast<NcclPath>(static_cast<int>(t)); }

// Paths from every node to `base` (ncclTopoSetPaths).
PathList paths_to(const NodeGraph& g, int base) {
  PathList paths(g.nodes.size());
  Path& self = paths[static_cast<std::size_t>(base)];
  self.bw = kLocBw;
  self.type = NcclPath::loc;
  std::vector<int> level{base};
  while (!level.empty()) {
    std::vector<int> next;
    for (int node : level) {
      const Path path = paths[static_cast<std::size_t>(node)];
      const Node& n = g.nodes[static_cast<std::size_t>(node)];
      for (int lid : n.out) {
        const Link& link = g.links[static_cast<std::size_t>(lid)];
        const Node& rem = g.nodes[static_cast<std::size_t>(link.to)];
        // Through a GPU only as one NVLink hop to another GPU.
        if (node != base && n.kind == NodeKind::gpu &&
            (link.type != LinkType::nvl || rem.kind != NodeKind::gpu || path.hops() > 1))
          continue;
        Path& remPath = paths[static_cast<std::size_t>(link.to)];
        const float bw = std::min(path.bw, link.bw);
        if (!((remPath.bw == 0 || remPath.hops() > path.hops()) && remPath.bw < bw)) continue;
        const int back = g.reverse_link(lid);
        if (back < 0) continue;
        remPath.links.assign(1, back);
        remPath.links.insert(remPath.links.end(), path.links.begin(), path.links.end());
        remPath.bw = bw;
        NcclPath type = link.type == LinkType::net ? NcclPath::loc : as_path(link.type);
        if (n.kind == NodeKind::pci && rem.kind == NodeKind::pci) type = NcclPath::pxb;
        if (link.type == LinkType::pci && (n.kind == NodeKind::cpu || rem.kind == NodeKind::cpu)) type = NcclPath::phb;
        if (n.kind == NodeKind::gpu && path.type == NcclPath::nvl && type == NcclPath::nvl && remPath.hops() > 1)
          type = NcclPath::nvb;
        remPath.type = std::max(path.type, type);
        if (std::find(next.begin(), next.end(), link.to) == next.end()) next.push_back(link.to);
      }
    }
    level = std::move(next);
  }
  for (Path& p : paths)
    if (p.bw == 0 && p.type != NcclPath::loc) p.type = NcclPath::dis;
  return paths;
}

// a -> via -> b, typed `type` when given (addInterStep).
Path join(const Path& a, const Path& b, NcclPath type) {
  Path p;
  p.links = a.links;
  p.links.insert(p.links.end(), b.links.begin(), b.links.end());
  p.bw = std::min(a.bw, b.bw);
  p.type = type == NcclPath::dis ? std::max(a.type, b.type) : type;
  return p;
}

// The CPU nearest to node `from` (ncclGetLocalCpu), -1 without CPUs.
int local_cpu(const NodeGraph& g, const std::vector<PathList>& to_cpu, const std::vector<int>& cpus, int from) {
  int best = -1;
  for (std::size_t c = 0; c < cpus.size(); ++c) {
    const Path& p = to_cpu[c][static_cast<std::size_t>(from)];
    if (p.type == NcclPath::dis) continue;
    if (best < 0 || p.type < to_cpu[static_cast<std::size_t>(best)][static_cast<std::size_t>(from)].type ||
        (p.type == to_cpu[static_cast<std::size_t>(best)][static_cast<std::size_t>(from)].type &&
         p.hops() < to_cpu[static_cast<std::size_t>(best)][static_cast<std::size_t>(from)].hops()))
      best = static_cast<int>(c);
  }
  (void)g;
  return best;
}

// GPU pairs beyond the P2P level talk through the receiving GPU's CPU (ncclTopoCheckP2p).
void divert_through_cpu(NodeGraph& g) {
  std::vector<int> cpus;
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].kind == NodeKind::cpu) cpus.push_back(static_cast<int>(i));
  if (cpus.empty()) return;
  std::vector<PathList> to_cpu;
  for (int c : cpus) to_cpu.push_back(paths_to(g, c));
  const bool amd_pair = is_amd(g.cpu) && g.num_gpus() <= 2;
  const NcclPath p2p_level = amd_pair ? NcclPath::sys : NcclPath::pxb;
  for (int dst = 0; dst < g.num_gpus(); ++dst) {
    const int cpu = local_cpu(g, to_cpu, cpus, g.gpus[static_cast<std::size_t>(dst)]);
    if (cpu < 0) continue;
    const PathList cpu_paths = paths_to(g, g.gpus[static_cast<std::size_t>(dst)]);
    const Path& cpu_to_dst = cpu_paths[static_cast<std::size_t>(cpus[static_cast<std::size_t>(cpu)])];
    for (int src = 0; src < g.num_gpus(); ++src) {
      Path& p = g.gpu_gpu[static_cast<std::size_t>(src)][static_cast<std::size_t>(dst)];
      if (src == dst || p.type <= p2p_level) continue;
      const Path& src_to_cpu = to_cpu[static_cast<std::size_t>(cpu)][static_cast<std::size_t>(g.gpus[static_cast<std::size_t>(src)])];
      p = join(src_to_cpu, cpu_to_dst, NcclPath::dis);
    }
  }
}

int local_gpu(const NodeGraph& g, int net, int max_channels) {
  const std::vector<int> gpus = nearest(g.net_gpu[static_cast<std::size_t>(net)]);
  for (int c = 0; c < max_channels; ++c)
    for (int gpu : gpus)
      if (local_net(g, gpu, c) == net) return gpu;
  return -1;
}

void add_pxn(NodeGraph& g) {
  for (int n = 0; n < g.num_nets(); ++n) {
    const int peer = g.net_local_gpu[static_cast<std::size_t>(n)];
    if (peer < 0) continue;
    const Path& peer_net = g.gpu_net[static_cast<std::size_t>(peer)][static_cast<std::size_t>(n)];
    for (int gpu = 0; gpu < g.num_gpus(); ++gpu) {
      if (gpu == peer) continue;
      Path& own = g.gpu_net[static_cast<std::size_t>(gpu)][static_cast<std::size_t>(n)];
      const Path& to_peer = g.gpu_gpu[static_cast<std::size_t>(gpu)][static_cast<std::size_t>(peer)];
      if (peer_net.type <= NcclPath::p2c && to_peer.type <= NcclPath::nvl &&
          (peer_net.bw > own.bw || own.type > NcclPath::pxn))
        own = join(to_peer, peer_net, NcclPath::pxn);
    }
  }
}

}  // namespace

// ncclTopoGetLocal: the targets nearest to one node (widest, then best type), in index order.
std::vector<int> nearest(const std::vector<Path>& row) {
  std::vector<int> out;
  float best_bw = 0;
  NcclPath best_type = NcclPath::dis;
  for (std::size_t i = 0; i < row.size(); ++i) {
    const Path& p = row[i];
    if (p.bw > best_bw || (p.bw == best_bw && p.type < best_type)) {
      best_bw = p.bw;
      best_type = p.type;
      out.clear();
    }
    if (p.bw == best_bw && p.type == best_type && p.type != NcclPath::dis) out.push_back(static_cast<int>(i));
  }
  return out;
}

static int mirror_bits(int val, int pow2) {
  int mirror = 0;
  for (int b = 1, mb = pow2 >> 1; b < pow2; b <<= 1, mb >>= 1)
    if (val & b) mirror |= mb;
  return mirror;
}

// ncclTopoGetLocalNet for GPU `gpu` and channel `channel`.
int local_net(const NodeGraph& g, int gpu, int channel) {
  const std::vector<int> nets = nearest(g.gpu_net[static_cast<std::size_t>(gpu)]);
  if (nets.empty()) return -1;
  const int count = static_cast<int>(nets.size());
  const std::vector<int> gpus = nearest(g.net_gpu[static_cast<std::size_t>(nets.front())]);
  const int per_gpu = (count + std::max<int>(1, static_cast<int>(gpus.size())) - 1) / std::max<int>(1, static_cast<int>(gpus.size()));
  int net = gpu;
  if ((count & (count - 1)) == 0) net = mirror_bits(net, count);
  net += channel % std::max(1, per_gpu);
  return nets[static_cast<std::size_t>(net % count)];
}

void compute_paths(NodeGraph& g, bool pxn) {
  const std::size_t ngpus = g.gpus.size();
  const std::size_t nnets = g.nets.size();
  std::vector<PathList> to_gpu, to_net;
  for (int gpu : g.gpus) to_gpu.push_back(paths_to(g, gpu));
  for (int net : g.nets) to_net.push_back(paths_to(g, net));
  g.gpu_gpu.assign(ngpus, std::vector<Path>(ngpus));
  g.gpu_net.assign(ngpus, std::vector<Path>(nnets));
  g.net_gpu.assign(nnets, std::vector<Path>(ngpus));
  for (std::size_t a = 0; a < ngpus; ++a) {
    for (std::size_t b = 0; b < ngpus; ++b) g.gpu_gpu[a][b] = to_gpu[b][static_cast<std::size_t>(g.gpus[a])];
    for (std::size_t n = 0; n < nnets; ++n) {
      g.gpu_net[a][n] = to_net[n][static_cast<std::size_t>(g.gpus[a])];
      g.net_gpu[n][a] = to_gpu[a][static_cast<std::size_t>(g.nets[n])];
    }
  }
  if (g.nvs >= 0) {
    const PathList to_nvs = paths_to(g, g.nvs);
    for (std::size_t a = 0; a < ngpus; ++a) {
      g.gpu_nvs.push_back(to_nvs[static_cast<std::size_t>(g.gpus[a])]);
      g.nvs_gpu.push_back(to_gpu[a][static_cast<std::size_t>(g.nvs)]);
    }
  }
  divert_through_cpu(g);
  g.net_local_gpu.assign(nnets, -1);
  for (std::size_t n = 0; n < nnets; ++n) g.net_local_gpu[n] = local_gpu(g, static_cast<int>(n), 64);
  if (pxn) {
    add_pxn(g);
    // NCCL recomputes each NIC's local GPU once the paths are final.
    for (std::size_t n = 0; n < nnets; ++n) g.net_local_gpu[n] = local_gpu(g, static_cast<int>(n), 64);
  }
  // What the search asks again and again, computed once.
  g.gpu_nets.assign(ngpus, {});
  for (std::size_t a = 0; a < ngpus; ++a)
    for (int c = 0; c < 64; ++c) {
      const int n = local_net(g, static_cast<int>(a), c);
      if (n < 0 || (!g.gpu_nets[a].empty() && n == g.gpu_nets[a].front())) break;
      g.gpu_nets[a].push_back(n);
    }
  g.net_near_gpus.assign(nnets, {});
  for (std::size_t n = 0; n < nnets; ++n) g.net_near_gpus[n] = nearest(g.net_gpu[n]);
}

}  // namespace colltune::sim::nccl
