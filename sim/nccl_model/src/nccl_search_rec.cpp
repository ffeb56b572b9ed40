// One pass of NCCL's channel search (src/graph/search.cc), written for colltune's node graph.
//
// A channel is built GPU by GPU. On one node a ring visits every GPU and closes back to the
// first; a tree is a chain. On several nodes a channel enters the node from a NIC's network
// port, visits every GPU, and leaves through a NIC (the same one unless rings may cross
// NICs): a ring leaves from its last GPU, a balanced tree from its first two (half the speed
// each), a simple tree from its first. An NVLS channel is one head GPU (entered from its NIC
// on several nodes) plus every GPU's traffic to and from the NVSwitch, the head's doubled. A
// CollNetDirect channel is a head GPU exchanging with every other GPU at 1/(n-1) of the speed.
//
// Every hop follows NCCL's precomputed path and subtracts the speed from each of its links
// (PCIe links through an Intel CPU pay 6/5 of it; links into a pre-sm80 GPU from a NIC carry
// 1/8 of it back); a hop whose links lack the bandwidth, or whose path type is beyond the
// pass's limit, is not taken. GPUs are tried in NCCL's order: channel 0 first in PCI order
// (no NVSwitch), later channels first replaying the previous one, then by score (widest
// then shortest path to the NIC and GPU); on an NVSwitch only the next and previous GPU.
#include "nccl_search_rec.hpp"

#include <algorithm>
#include <cmath>

namespace colltune::sim::nccl {
namespace {

// SUB_ROUND: keep link bandwidths on a 1/1000 grid so additions and subtractions cancel.
float sub_round(float a, float b) { return std::round((a - b) * 1000.0f) / 1000.0f; }

}  // namespace

ChannelSearcher::ChannelSearcher(NodeGraph& node, const SearchContext& context)
    : g_(node), ctx_(context), used_(static_cast<std::size_t>(node.num_gpus()), 0) {}

bool ChannelSearcher::is_tree() const {
  return tmp_->pattern == Pattern::balanced_tree || tmp_->pattern == Pattern::tree ||
         tmp_->pattern == Pattern::split_tree;
}

void ChannelSearcher::run(SearchGraph& trial, SearchGraph& best, long& budget) {
  tmp_ = &trial;
  best_ = &best;
  const auto n = static_cast<std::size_t>(trial.max_channels);
  trial.intra.assign(n, std::vector<int>(static_cast<std::size_t>(ngpus()), -1));
  trial.inter.assign(n, {-1, -1});
  // One list of next GPUs per channel and step: a complete channel starts the next one
  // while the loops over the lists of the channels before it are still running.
  if (next_.size() < (n + 1) * static_cast<std::size_t>(ngpus() + 1)) next_.resize((n + 1) * static_cast<std::size_t>(ngpus() + 1));
  search_rec(budget);
}

int ChannelSearcher::node_of(End e) const {
  const auto i = static_cast<std::size_t>(e.index);
  switch (e.kind) {
    case NodeKind::gpu: return g_.gpus[i];
    case NodeKind::net: return g_.nets[i];
    case NodeKind::nvs: return g_.nvs;
    default: return -1;
  }
}

const Path& ChannelSearcher::path(End from, End to) const {
  const auto a = static_cast<std::size_t>(from.index), b = static_cast<std::size_t>(to.index);
  if (from.kind == NodeKind::gpu && to.kind == NodeKind::gpu) return g_.gpu_gpu[a][b];
  if (from.kind == NodeKind::gpu && to.kind == NodeKind::net) return g_.gpu_net[a][b];
  if (from.kind == NodeKind::net) return g_.net_gpu[a][b];
  if (from.kind == NodeKind::nvs) return g_.nvs_gpu[b];
  return g_.gpu_nvs[a];
}

// followPath: take `bw` from the first `steps` links of `path`; stops at the first link that
// lacks it (*done = links taken). A negative bw gives bandwidth back.
bool ChannelSearcher::follow_links(const Path& p, int start_node, int steps, float bw, int* done) {
  const bool start_gpu = g_.nodes[static_cast<std::size_t>(start_node)].kind == NodeKind::gpu;
  float pci_bw = bw;
  if (p.type == NcclPath::phb && start_gpu && !is_amd(g_.cpu))
    for (int lid : p.links)
      if (g_.nodes[static_cast<std::size_t>(g_.links[static_cast<std::size_t>(lid)].to)].kind == NodeKind::cpu)
        pci_bw = bw * 6 / 5;  // INTEL_P2P_OVERHEAD
  for (int s = 0; s < steps; ++s) {
    Link& link = g_.links[static_cast<std::size_t>(p.links[static_cast<std::size_t>(s)])];
    const Node& rem = g_.nodes[static_cast<std::size_t>(link.to)];
    const float fw = link.type == LinkType::pci ? pci_bw : bw;
    const float rev_bw = rem.kind == NodeKind::gpu && rem.cc < 80 && !start_gpu ? fw / 8 : 0;
    const int rev = rev_bw != 0 ? g_.reverse_link(p.links[static_cast<std::size_t>(s)]) : -1;
    if (link.bw < fw || (rev >= 0 && g_.links[static_cast<std::size_t>(rev)].bw < rev_bw)) {
      *done = s;
      return false;
    }
    link.bw = sub_round(link.bw, fw);
    if (rev >= 0) g_.links[static_cast<std::size_t>(rev)].bw = sub_round(g_.links[static_cast<std::size_t>(rev)].bw, rev_bw);
  }
  *done = steps;
  return true;
}

// ncclTopoFollowPath: take (mult > 0) or give back (mult < 0) the channel's speed on the path
// between two endpoints; the speed is bwIntra between GPUs/NVSwitch, bwInter to a NIC.
bool ChannelSearcher::follow(End from, End to, float mult) {
  if (from.index < 0) return true;
  const Path& p = path(from, to);
  const bool intra = from.kind != NodeKind::net && to.kind != NodeKind::net;
  const float speed = intra ? tmp_->bw_intra : tmp_->bw_inter;
  const NcclPath limit = intra ? tmp_->type_intra : tmp_->type_inter;
  if (p.type >= NcclPath::dis) return false;
  if (mult == 1 && p.type > limit) return false;
  if (mult == 1 && is_tree() && path(to, from).type > limit) return false;
  const float bw = speed * mult;
  int done = 0;
  if (!follow_links(p, node_of(from), p.hops(), bw, &done)) {
    int undone = 0;
    follow_links(p, node_of(from), done, -bw, &undone);
    return false;
  }
  tmp_->nhops = static_cast<int>(static_cast<float>(tmp_->nhops) + mult * static_cast<float>(p.hops()));
  return true;
}

void ChannelSearcher::try_gpu(int step, int back_to_net, int back_to_first, Order order, End from, int gpu,
                              long& time) {
  const End to{NodeKind::gpu, gpu};
  if (!follow(from, to, 1)) return;
  const std::uint64_t flag = std::uint64_t{1} << channel();
  used_[static_cast<std::size_t>(gpu)] ^= flag;
  rec_gpu(gpu, step, back_to_net, back_to_first, order, time);
  used_[static_cast<std::size_t>(gpu)] ^= flag;
  follow(from, to, -1);
}

void ChannelSearcher::channel_done(long& time) {
  tmp_->nchannels++;
  if (better(*tmp_, *best_)) {
    *best_ = *tmp_;
    if (tmp_->nchannels == tmp_->max_channels) time = -1;
  }
  if (tmp_->nchannels < tmp_->max_channels) search_rec(time);
  tmp_->nchannels--;
}

void ChannelSearcher::rec_gpu(int gpu, int step, int back_to_net, int back_to_first, Order order, long& time) {
  if (time <= 0) return;
  --time;
  if (step == ngpus()) {
    channel_done(time);
    return;
  }
  tmp_->intra[static_cast<std::size_t>(channel())][static_cast<std::size_t>(step)] = gpu;
  if (step == back_to_net) {
    back_to_net_step(gpu, step, back_to_net, back_to_first, order, time);
  } else if (tmp_->pattern == Pattern::nvls) {
    try_nvls(gpu, time);
  } else if (tmp_->pattern == Pattern::collnet_direct) {
    try_collnet_direct(gpu, time);
  } else {
    next_step(gpu, step, back_to_net, back_to_first, order, time);
  }
}

// The channel leaves the node: from `gpu` to a NIC the pattern allows.
void ChannelSearcher::back_to_net_step(int gpu, int step, int back_to_net, int back_to_first, Order order,
                                       long& time) {
  (void)back_to_net;
  if (!ctx_.inter) return;
  auto& inter = tmp_->inter[static_cast<std::size_t>(channel())];
  const int start_net = inter[0];
  for (int n : select_nets(gpu)) {
    if (!check_net(start_net, n, step)) continue;
    const bool balanced = tmp_->pattern == Pattern::balanced_tree;
    const int next_back = balanced && step == 0 ? 1 : -1;  // a balanced tree's second GPU leaves too
    const float saved = tmp_->bw_inter;
    if (balanced) tmp_->bw_inter /= 2;
    const bool ok = follow({NodeKind::gpu, gpu}, {NodeKind::net, n}, 1);
    tmp_->bw_inter = saved;
    if (!ok) continue;
    inter[1] = n;
    rec_gpu(gpu, step, next_back, back_to_first, order, time);
    if (balanced) tmp_->bw_inter /= 2;
    follow({NodeKind::gpu, gpu}, {NodeKind::net, n}, -1);
    tmp_->bw_inter = saved;
  }
}

void ChannelSearcher::next_step(int gpu, int step, int back_to_net, int back_to_first, Order order, long& time) {
  if (step < ngpus() - 1) {
    std::vector<int>& next = next_[static_cast<std::size_t>(channel() * (ngpus() + 1) + step)];
    if (order == Order::pci) {
      next.assign(1, step + 1);
    } else if (order == Order::replay) {
      next.assign(1, tmp_->intra[static_cast<std::size_t>(channel() - 1)][static_cast<std::size_t>(step + 1)]);
    } else {
      next_gpus(gpu, back_to_net == -1 ? 0 : back_to_net == step + 1 ? 1 : -1, next);
    }
    for (int n : next) try_gpu(step + 1, back_to_net, back_to_first, order, {NodeKind::gpu, gpu}, n, time);
  } else if (step == back_to_first) {
    const int first = tmp_->intra[static_cast<std::size_t>(channel())][0];
    if (follow({NodeKind::gpu, gpu}, {NodeKind::gpu, first}, 1)) {
      rec_gpu(first, step + 1, back_to_net, -1, order, time);
      follow({NodeKind::gpu, gpu}, {NodeKind::gpu, first}, -1);
    }
  } else {
    rec_gpu(gpu, ngpus(), -1, -1, order, time);
  }
}

// Every GPU pulls from and pushes to the NVSwitch; the head GPU twice.
void ChannelSearcher::try_nvls(int head, long& time) {
  const End nvs{NodeKind::nvs, 0};
  int down = 0, up = 0;
  const auto mult = [&](int d) { return d == head ? 2.0f : 1.0f; };
  while (down < ngpus() && follow(nvs, {NodeKind::gpu, down}, mult(down))) ++down;
  if (down == ngpus()) {
    while (up < ngpus() && follow({NodeKind::gpu, up}, nvs, mult(up))) ++up;
    if (up == ngpus()) rec_gpu(-1, ngpus(), -1, -1, Order::free, time);
    while (up > 0) {
      --up;
      follow({NodeKind::gpu, up}, nvs, -mult(up));
    }
  }
  while (down > 0) {
    --down;
    follow(nvs, {NodeKind::gpu, down}, -mult(down));
  }
}

// The head exchanges with every GPU at 1/(n-1) of the speed, both ways.
void ChannelSearcher::try_collnet_direct(int head, long& time) {
  const float mul = 1.0f / static_cast<float>(ngpus() - 1);
  const End h{NodeKind::gpu, head};
  int fwd = 0, bwd = 0;
  while (fwd < ngpus() && follow(h, {NodeKind::gpu, fwd}, mul)) ++fwd;
  if (fwd == ngpus()) {
    while (bwd < ngpus() && follow({NodeKind::gpu, bwd}, h, mul)) ++bwd;
    if (bwd == ngpus()) {
      auto& order = tmp_->intra[static_cast<std::size_t>(channel())];
      int step = 1;
      for (int i = 0; i < ngpus(); ++i)
        if (i != head) order[static_cast<std::size_t>(step++)] = i;
      rec_gpu(-1, ngpus(), -1, -1, Order::free, time);
    }
    while (bwd > 0) follow({NodeKind::gpu, --bwd}, h, -mul);
  }
  while (fwd > 0) follow(h, {NodeKind::gpu, --fwd}, -mul);
}

}  // namespace colltune::sim::nccl
