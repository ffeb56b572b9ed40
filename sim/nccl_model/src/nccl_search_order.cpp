// Where NCCL's channel search starts each channel and in which order it tries GPUs and NICs
// (src/graph/search.cc: ncclTopoSearchRec, ncclTopoSearchRecNet, ncclTopoSearchNextGpuSort,
// ncclTopoSelectNets, ncclTopoSearchCheckNet, ncclTopoCompareGraphs).
#include <algorithm>
#include <array>
#include <tuple>

#include "nccl_search_rec.hpp"

namespace colltune::sim::nccl {
namespace {

constexpr long kPciOrderBudget = 1L << 10;
constexpr int kMaxLocalChannels = 64;  // MAXCHANNELS, the bound of NCCL's per-GPU NIC scan

}  // namespace

// A channel starts on the node: from a NIC's port on several nodes, else from a GPU (channel
// 0 in PCI order first, later channels replaying the previous one, then any start unless the
// channels must all be the same).
void ChannelSearcher::search_rec(long& time) {
  const bool ring = tmp_->pattern == Pattern::ring;
  int back_to_net = -1, back_to_first = -1;
  if (ctx_.inter) {
    back_to_net = ring ? ngpus() - 1 : tmp_->pattern == Pattern::split_tree ? 1 : 0;
    search_rec_net(back_to_net, back_to_first, time);
    return;
  }
  if (ring) back_to_first = ngpus() - 1;
  const End none{};
  if (tmp_->pattern == Pattern::nvls) {
    try_gpu(0, back_to_net, back_to_first, Order::free, none, channel(), time);
    return;
  }
  if (channel() == 0) {
    try_gpu(0, back_to_net, back_to_first, Order::pci, none, 0, time);
  } else {
    const int first = tmp_->intra[static_cast<std::size_t>(channel() - 1)][0];
    try_gpu(0, back_to_net, back_to_first, Order::replay, none, first, time);
  }
  if (!tmp_->same_channels || channel() == 0)
    for (int gpu = 0; gpu < ngpus(); ++gpu) try_gpu(0, back_to_net, back_to_first, Order::free, none, gpu, time);
}

void ChannelSearcher::search_rec_net(int back_to_net, int back_to_first, long& time) {
  const std::vector<int> nets = select_nets(-1);
  const int count = static_cast<int>(nets.size());
  const bool heads = tmp_->pattern == Pattern::nvls || tmp_->pattern == Pattern::collnet_direct;
  // NCCL compares the NIC's remaining speed with the channel speed truncated to an integer.
  const int speed = static_cast<int>(tmp_->bw_inter);
  bool found = false;
  for (int i = 0; i < count; ++i) {
    if (heads && found) break;
    const int n = nets[static_cast<std::size_t>((channel() + i) % count)];
    if (g_.net_bw[static_cast<std::size_t>(n)] < static_cast<float>(speed)) continue;
    if (tmp_->pattern == Pattern::ring && tmp_->cross_nic == 2 && (channel() & 1) &&
        n != tmp_->inter[static_cast<std::size_t>(channel() - 1)][1])
      continue;
    tmp_->inter[static_cast<std::size_t>(channel())][0] = n;
    g_.net_bw[static_cast<std::size_t>(n)] -= static_cast<float>(speed);
    if (heads) {
      const int head = g_.net_local_gpu[static_cast<std::size_t>(n)];
      bool duplicate = head < 0 || channel() >= count;
      for (int c = 0; c < channel() && !duplicate; ++c)
        duplicate = tmp_->intra[static_cast<std::size_t>(c)][0] == head;
      if (!duplicate) {
        try_gpu(0, back_to_net, back_to_first, Order::free, {NodeKind::net, n}, head, time);
        found = true;
      }
    } else {
      try_net(n, back_to_net, back_to_first, time);
    }
    g_.net_bw[static_cast<std::size_t>(n)] += static_cast<float>(speed);
  }
}

// The channel enters through NIC `n`: replay the previous channel's first GPU when channels
// must be the same; otherwise PCI order (channel 0 without NVSwitch, on a small budget of its
// own), then the NIC's local GPU, then every GPU as near to the NIC.
void ChannelSearcher::try_net(int n, int back_to_net, int back_to_first, long& time) {
  const End from{NodeKind::net, n};
  if (channel() > 0 && tmp_->same_channels) {
    const int first = tmp_->intra[static_cast<std::size_t>(channel() - 1)][0];
    try_gpu(0, back_to_net, back_to_first, Order::replay, from, first, time);
    return;
  }
  if (channel() == 0 && g_.nvs < 0) {
    long budget = kPciOrderBudget;
    try_gpu(0, back_to_net, back_to_first, Order::pci, from, 0, budget);
    if (budget == -1) time = -1;
  }
  const int local = g_.net_local_gpu[static_cast<std::size_t>(n)];
  if (local >= 0) try_gpu(0, back_to_net, back_to_first, Order::free, from, local, time);
  for (int gpu : g_.net_near_gpus[static_cast<std::size_t>(n)])
    if (gpu != local) try_gpu(0, back_to_net, back_to_first, Order::free, from, gpu, time);
}

// gpuPciBw: what is left of the GPU's PCIe link, the smaller of its two directions.
int ChannelSearcher::pci_bw(int gpu) const {
  const int lid = g_.gpu_pci[static_cast<std::size_t>(gpu)];
  if (lid < 0) return -1;
  const Link& l = g_.links[static_cast<std::size_t>(lid)];
  const int back = g_.reverse_link(lid);
  return static_cast<int>(std::min(l.bw, back >= 0 ? g_.links[static_cast<std::size_t>(back)].bw : l.bw));
}

// The GPUs to try after `gpu` (ncclTopoSearchNextGpuSort): unused GPUs reachable from it,
// best first by (speed to the entry NIC, PCIe speed, hops to the NIC) when the next GPU
// returns to the network (sort_net), then by path speed and hops from `gpu`; reversed when
// sort_net is -1 and all are alike. On an NVSwitch only the neighbours in index order.
void ChannelSearcher::next_gpus(int gpu, int sort_net, std::vector<int>& next) {
  const std::uint64_t flag = std::uint64_t{1} << channel();
  const int n = ngpus();
  const int entry_net = tmp_->inter[static_cast<std::size_t>(channel())][0];
  std::vector<Score>& scores = scores_;
  scores.clear();
  for (int i = 1; i < n; ++i) {
    const int g = (gpu + i) % n;
    const Path& p = g_.gpu_gpu[static_cast<std::size_t>(gpu)][static_cast<std::size_t>(g)];
    if (p.hops() == 0 || (used_[static_cast<std::size_t>(g)] & flag)) continue;
    Score s{g, i, p.hops(), static_cast<int>(p.bw)};
    if (sort_net != 0 && entry_net >= 0) {
      const Path& np = g_.net_gpu[static_cast<std::size_t>(entry_net)][static_cast<std::size_t>(g)];
      s.inter_hops = np.hops();
      s.inter_pci = pci_bw(g);
      s.inter_bw = static_cast<int>(np.bw);
    }
    scores.push_back(s);
  }
  std::sort(scores.begin(), scores.end(), [](const Score& a, const Score& b) {
    return std::tie(b.inter_bw, b.inter_pci, a.inter_hops, b.intra_bw, a.intra_hops, a.start) <
           std::tie(a.inter_bw, a.inter_pci, b.inter_hops, a.intra_bw, b.intra_hops, b.start);
  });
  const bool alike = std::all_of(scores.begin(), scores.end(), [&](const Score& s) {
    return s.intra_bw == scores.front().intra_bw && s.intra_hops == scores.front().intra_hops;
  });
  next.clear();
  for (const Score& s : scores) next.push_back(s.g);
  if (sort_net == -1 && alike) std::reverse(next.begin(), next.end());
  if (g_.nvs < 0) return;
  // NVSwitches prefer few peers: try the neighbours, each one moved to the front in turn.
  const int prev = (gpu - 1 + n) % n, after = (gpu + 1) % n;
  std::array<int, 2> first{after, prev};
  std::size_t nfirst = 2;
  if (tmp_->pattern == Pattern::split_tree || tmp_->pattern == Pattern::balanced_tree) first = {prev, after};
  else if (tmp_->pattern != Pattern::ring) nfirst = 1;
  if (nfirst == 2 && first[0] == first[1]) nfirst = 1;
  int found = 0;
  for (std::size_t i = 0; i < nfirst; ++i) {
    const int f = first[i];
    auto it = std::find(next.begin(), next.end(), f);
    if (it == next.end()) continue;
    next.erase(it);
    next.insert(next.begin(), f);
    ++found;
  }
  next.resize(static_cast<std::size_t>(found));
}

// The NICs a channel may use, preferred first (ncclTopoSelectNets, one host, default policy):
// each GPU's own NICs in channel order, then every NIC by path type up to the pass's limit.
const std::vector<int>& ChannelSearcher::select_nets(int gpu) {
  const auto key = std::make_pair(gpu, static_cast<int>(tmp_->type_inter));
  if (auto it = nets_cache_.find(key); it != nets_cache_.end()) return it->second;
  std::vector<int>& nets = nets_cache_[key];
  const auto add = [&](int n) {
    if (std::find(nets.begin(), nets.end(), n) == nets.end()) nets.push_back(n);
  };
  for (int g = 0; g < ngpus(); ++g) {
    if (gpu != -1 && gpu != g) continue;
    for (int n : g_.gpu_nets[static_cast<std::size_t>(g)]) add(n);
  }
  for (int t = 0; t <= static_cast<int>(tmp_->type_inter); ++t)
    for (int g = 0; g < ngpus(); ++g) {
      if (gpu != -1 && gpu != g) continue;
      for (int n = 0; n < g_.num_nets() && n < kMaxLocalChannels; ++n)
        if (static_cast<int>(g_.gpu_net[static_cast<std::size_t>(g)][static_cast<std::size_t>(n)].type) == t) add(n);
    }
  return nets;
}

// ncclTopoSearchCheckNet: may the channel that entered by `start_net` leave by `n`?
bool ChannelSearcher::check_net(int start_net, int n, int step) const {
  if (tmp_->pattern == Pattern::tree && n != start_net) return false;  // trees are symmetric
  if (tmp_->pattern == Pattern::ring && tmp_->cross_nic == 2) {
    if ((channel() & 1) && n != tmp_->inter[static_cast<std::size_t>(channel() - 1)][0]) return false;
  } else if (tmp_->cross_nic == 0 && n != start_net) {
    return false;  // each NIC here is its own ASIC and port
  }
  if (tmp_->pattern == Pattern::balanced_tree && step != 0 &&
      n != tmp_->inter[static_cast<std::size_t>(channel())][1])
    return false;
  return true;
}

// ncclTopoCompareGraphs: is `graph` better than `ref`?
bool ChannelSearcher::better(const SearchGraph& graph, const SearchGraph& ref) const {
  if (graph.nchannels < graph.min_channels) return false;
  if (graph.pattern == Pattern::nvls)  // more NVLS heads is better
    return (graph.nchannels > ref.nchannels && graph.nchannels <= ngpus()) ||
           static_cast<float>(graph.nchannels) * graph.bw_inter > static_cast<float>(ref.nchannels) * ref.bw_inter;
  const float have = static_cast<float>(graph.nchannels) * graph.bw_intra;
  const float had = static_cast<float>(ref.nchannels) * ref.bw_intra;
  if (have != had) return have > had;
  return graph.pattern == ref.pattern && graph.cross_nic == ref.cross_nic && graph.nhops < ref.nhops;
}

}  // namespace colltune::sim::nccl
