// NCCL's channel search driver (src/graph/search.cc: ncclTopoSearchInit, ncclTopoCompute,
// ncclTopoDupChannels):
//  - maxBw is the widest path from a GPU to another GPU (one node) or to a NIC (several);
//    totalBw a GPU's NVLink total or PCIe link, whichever is larger.
//  - Pass 1 starts at the fastest per-channel speed of the generation's list that is at most
//    maxBw and whose minChannels fit in totalBw (x n/(n-1) for trees). At each speed it tries,
//    in turn: the same GPU order for every channel, then different orders; (sm90) the simple
//    tree instead of the balanced one; wider intra-node path types (only while nothing better
//    was found); wider NIC path types (up to PXN even after a solution); rings that leave by
//    another NIC. Then the next slower speed, while it is more than .49 of the best found.
//    It stops early when a search fills maxChannels or the channels cover totalBw.
//  - The best graph is duplicated (twice the channels at half the speed) when its speed is at
//    least 25 GB/s, except on sm90+ below 50 GB/s with more than 4 channels (never for NVLS).
//  - Pass 2 raises the speed with the channel count kept: rings both speeds; NVLS the network
//    speed; trees the intra-node speed, up to twice the network one.
#include "nccl_search.hpp"

#include <algorithm>
#include <string>

#include "colltune/common/memo_key.hpp"
#include "colltune/common/once_map.hpp"
#include "nccl_search_rec.hpp"

namespace colltune::sim::nccl {
namespace {

constexpr long kTimeout = 1L << 14;              // NCCL_SEARCH_TIMEOUT (and _TREE)
constexpr long kTimeoutSameChannels = 1L << 8;   // NCCL_SEARCH_TIMEOUT_SAMECHANNELS
constexpr long kGlobalTimeout = 1L << 19;        // NCCL_SEARCH_GLOBAL_TIMEOUT

const std::vector<float>& speed_list(const NcclConstants& k, int cc_min, bool inter) {
  const NcclSpeeds& s = cc_min >= 100 ? k.speeds_sm100 : cc_min >= 90 ? k.speeds_sm90 : k.speeds_pre_sm90;
  return inter ? s.inter : s.intra;
}

// Two NVLink domains (e.g. two sockets of NVLink-joined GPUs): rings need two channels.
bool split_nvlink(const NodeGraph& g) {
  const int n = g.num_gpus();
  if (n < 2) return false;
  std::vector<int> domain(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) domain[static_cast<std::size_t>(i)] = i;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (g.gpu_gpu[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)].type == NcclPath::nvl)
        domain[static_cast<std::size_t>(j)] = domain[static_cast<std::size_t>(i)];
  std::vector<int> size(static_cast<std::size_t>(n), 0);
  for (int d : domain) ++size[static_cast<std::size_t>(d)];
  return std::count_if(size.begin(), size.end(), [](int s) { return s > 1; }) == 2;
}

struct TypeRange {
  NcclPath min_intra = NcclPath::loc, max_intra = NcclPath::sys;
  NcclPath min_inter = NcclPath::pix, max_inter = NcclPath::sys;
};

TypeRange type_range(const NodeGraph& g, bool inter) {
  TypeRange r;
  const auto scan = [](const std::vector<std::vector<Path>>& rows, bool skip_diagonal, NcclPath& lo, NcclPath& hi) {
    lo = NcclPath::sys;
    hi = NcclPath::loc;
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (std::size_t j = 0; j < rows[i].size(); ++j) {
        if (skip_diagonal && i == j) continue;
        lo = std::min(lo, rows[i][j].type);
        hi = std::max(hi, rows[i][j].type);
      }
  };
  if (g.num_gpus() > 1) scan(g.gpu_gpu, true, r.min_intra, r.max_intra);
  if (inter) {
    scan(g.gpu_net, false, r.min_inter, r.max_inter);
    r.max_intra = r.max_inter;
  }
  return r;
}

// ncclTopoDupChannels.
void dup_channels(SearchGraph& g, int cc_min) {
  if (g.nchannels == 0 || g.pattern == Pattern::nvls || g.bw_intra < 25.0f) return;
  if (cc_min > 80 && g.bw_intra < 50.0f && g.nchannels > 4) return;
  const int dup = std::min(g.nchannels * 2, g.max_channels);
  for (int c = g.nchannels; c < dup; ++c) {
    g.intra[static_cast<std::size_t>(c)] = g.intra[static_cast<std::size_t>(c - g.nchannels)];
    g.inter[static_cast<std::size_t>(c)] = g.inter[static_cast<std::size_t>(c - g.nchannels)];
  }
  const int factor = (dup + g.nchannels - 1) / g.nchannels;
  g.bw_intra /= static_cast<float>(factor);
  g.bw_inter /= static_cast<float>(factor);
  g.nchannels = dup;
}

// The speed loop of ncclTopoCompute over one working copy of the node.
class SpeedLoop {
 public:
  SpeedLoop(NodeGraph& node, const SearchContext& ctx, SearchGraph& graph)
      : node_(node), ctx_(ctx), graph_(graph), speeds_(speed_list(*ctx.constants, ctx.cc_min, ctx.inter)),
        bounds_(search_bounds(node, ctx.inter)), types_(type_range(node, ctx.inter)) {}

  void run();

 private:
  NodeGraph& node_;
  const SearchContext& ctx_;
  SearchGraph& graph_;
  const std::vector<float>& speeds_;
  SearchBounds bounds_;
  TypeRange types_;
  SearchGraph tmp_;
  std::size_t speed_ = 0;
  int cross_nic_ = 0;
  bool try_same_ = true;
  long global_ = kGlobalTimeout;

  void set_speed(std::size_t i) { speed_ = i; tmp_.bw_intra = tmp_.bw_inter = speeds_[i]; }
  bool next_pass1_trial(long time);
  bool next_pass2_trial(long time);
  void start_pass2();
};

void SpeedLoop::run() {
  const int ngpus = node_.num_gpus();
  const bool multi_nic = node_.num_nets() > 1;
  const Pattern p = graph_.pattern;
  cross_nic_ = multi_nic && (p == Pattern::ring || p == Pattern::balanced_tree || p == Pattern::split_tree) ? 2 : 0;
  graph_.cross_nic = cross_nic_ == 1 ? 1 : 0;
  graph_.type_intra = types_.min_intra;
  graph_.type_inter = types_.min_inter;
  try_same_ = p != Pattern::nvls;
  graph_.same_channels = try_same_;
  tmp_ = graph_;
  float total = bounds_.total_bw;
  if (ngpus > 1 && p != Pattern::ring) total *= static_cast<float>(ngpus) / static_cast<float>(ngpus - 1);
  std::size_t i = 0;
  while ((speeds_[i] > bounds_.max_bw || speeds_[i] * static_cast<float>(graph_.min_channels) > total) &&
         i + 1 < speeds_.size())
    ++i;
  set_speed(i);
  int pass = 1;
  ChannelSearcher searcher(node_, ctx_);
  for (;;) {
    long time = tmp_.same_channels ? kTimeoutSameChannels : kTimeout;
    tmp_.nchannels = 0;
    global_ -= time;
    searcher.run(tmp_, graph_, time);
    const bool done = time == -1 || static_cast<float>(graph_.nchannels) * graph_.bw_inter >= bounds_.total_bw;
    if (!done && pass == 1 && next_pass1_trial(time)) continue;
    if (pass == 1) {
      start_pass2();
      pass = 2;
      time = -1;
    }
    if (!next_pass2_trial(time)) break;
  }
}

bool SpeedLoop::next_pass1_trial(long time) {
  if (tmp_.same_channels && !(is_amd(node_.cpu) && tmp_.type_intra == NcclPath::sys)) {
    tmp_.same_channels = false;
    return true;
  }
  tmp_.same_channels = try_same_;
  if (time != -1) global_ += time;
  else global_ = kGlobalTimeout;
  if (global_ < 0 && graph_.nchannels) return false;
  if (ctx_.cc_min >= 90 && tmp_.pattern == Pattern::balanced_tree) {
    tmp_.pattern = Pattern::tree;
    return true;
  }
  tmp_.pattern = graph_.pattern;
  const NcclPath max_intra = ctx_.inter ? tmp_.type_inter : types_.max_intra;
  if (tmp_.type_intra < max_intra && (graph_.nchannels == 0 || tmp_.type_intra < graph_.type_intra)) {
    tmp_.type_intra = static_cast<NcclPath>(static_cast<int>(tmp_.type_intra) + 1);
    if (tmp_.type_intra < NcclPath::dis) return true;
  }
  tmp_.type_intra = types_.min_intra;
  if (ctx_.inter && tmp_.type_inter < types_.max_inter &&
      (graph_.nchannels == 0 || tmp_.type_inter < graph_.type_inter || tmp_.type_inter < NcclPath::pxn)) {
    tmp_.type_inter = static_cast<NcclPath>(static_cast<int>(tmp_.type_inter) + 1);
    if (tmp_.type_inter < NcclPath::dis) return true;
  }
  tmp_.type_inter = types_.min_inter;
  if (cross_nic_ == 2 && tmp_.cross_nic == 0 &&
      (graph_.pattern == Pattern::ring || graph_.pattern == Pattern::balanced_tree)) {
    tmp_.cross_nic = 2;
    return true;
  }
  tmp_.cross_nic = cross_nic_ == 1 ? 1 : 0;
  if (speed_ + 1 < speeds_.size() && (graph_.nchannels == 0 || speeds_[speed_ + 1] / graph_.bw_inter > .49f)) {
    set_speed(speed_ + 1);
    return true;
  }
  std::size_t i = 0;
  while (speeds_[i] > bounds_.max_bw && i + 1 < speeds_.size()) ++i;
  set_speed(i);
  return false;
}

void SpeedLoop::start_pass2() {
  dup_channels(graph_, ctx_.cc_min);
  tmp_ = graph_;
  std::size_t i = 0;
  while (speeds_[i] > graph_.bw_inter && i + 1 < speeds_.size()) ++i;
  set_speed(i);
  tmp_.min_channels = graph_.nchannels;
}

bool SpeedLoop::next_pass2_trial(long time) {
  if (time != 0 && speed_ > 0) {
    if (graph_.pattern == Pattern::ring) {
      set_speed(speed_ - 1);
      return true;
    }
    if (graph_.pattern == Pattern::nvls && tmp_.bw_inter == graph_.bw_inter && tmp_.bw_inter < tmp_.bw_intra * 2) {
      tmp_.min_channels = tmp_.max_channels = graph_.nchannels;
      tmp_.bw_inter = speeds_[--speed_];
      return true;
    }
    if (tmp_.bw_intra == graph_.bw_intra && tmp_.bw_intra < tmp_.bw_inter * 2) {
      tmp_.bw_intra = speeds_[--speed_];
      return true;
    }
  }
  return false;
}

}  // namespace

SearchBounds search_bounds(const NodeGraph& node, bool inter) {
  SearchBounds b;
  if (!inter && node.num_gpus() == 1) return {kLocBw, kLocBw};
  for (int g = 0; g < node.num_gpus(); ++g) {
    for (const Path& p : inter ? node.gpu_net[static_cast<std::size_t>(g)] : node.gpu_gpu[static_cast<std::size_t>(g)])
      if (p.hops() > 0) b.max_bw = std::max(b.max_bw, p.bw);
    float nvl = 0, pci = 0;
    for (int lid : node.nodes[static_cast<std::size_t>(node.gpus[static_cast<std::size_t>(g)])].out) {
      const Link& l = node.links[static_cast<std::size_t>(lid)];
      if (l.type == LinkType::nvl) nvl += l.bw;
      if (l.type == LinkType::pci) pci = l.bw;
    }
    b.total_bw = std::max(b.total_bw, std::max(pci, nvl));
  }
  return b;
}

namespace {

SearchGraph search_once(const NodeGraph& node, const SearchContext& context, const SearchRequest& request) {
  const NcclConstants& k = *context.constants;
  NodeGraph work = node;
  const int ngpus = work.num_gpus();
  SearchGraph graph;
  graph.pattern = request.pattern;
  graph.collnet = request.collnet;
  graph.min_channels = request.min_channels;
  graph.max_channels = request.max_channels;
  if (request.pattern == Pattern::nvls && (work.nvs < 0 || context.cc_min < 90)) return graph;
  if (request.pattern == Pattern::nvls) graph.max_channels = std::min(k.max_nvls_arity, ngpus);
  if (request.pattern == Pattern::collnet_direct) graph.max_channels = std::min(k.max_direct_arity + 1, ngpus);
  if (ngpus == 1 && graph.pattern != Pattern::ring) graph.pattern = Pattern::tree;
  if (!context.inter && graph.pattern == Pattern::nvls) graph.min_channels = graph.max_channels;
  if (graph.pattern == Pattern::ring && split_nvlink(work) && graph.max_channels >= 2 && graph.min_channels == 1)
    graph.min_channels = 2;
  SpeedLoop(work, context, graph).run();
  if (graph.nchannels == 0 && !graph.collnet && graph.pattern != Pattern::nvls) {
    // No path found: one slow channel in GPU order (NCCL's "simple order" fallback).
    graph.intra.assign(1, std::vector<int>(static_cast<std::size_t>(ngpus)));
    for (int g = 0; g < ngpus; ++g) graph.intra[0][static_cast<std::size_t>(g)] = g;
    graph.inter.assign(1, {context.inter ? 0 : -1, context.inter ? 0 : -1});
    graph.bw_intra = graph.bw_inter = 0.1f;
    graph.type_intra = graph.type_inter = NcclPath::sys;
    graph.nchannels = 1;
  }
  graph.intra.resize(static_cast<std::size_t>(graph.nchannels));
  graph.inter.resize(static_cast<std::size_t>(graph.nchannels));
  return graph;
}

// The bytes of everything a search reads: the node (its nodes, its links with their speeds, the
// paths and nearest NICs built from them), the release's constants, the GPUs' compute capability,
// whether channels cross nodes, and the request. A field added to NodeGraph must be added here.
// A list is its length, then its items.
void append_list(std::string& key, const std::vector<int>& v) {
  append_raw(key, v.size());
  for (int x : v) append_raw(key, x);
}
void append_list(std::string& key, const std::vector<float>& v) {
  append_raw(key, v.size());
  for (float x : v) append_raw(key, x);
}
void append_list(std::string& key, const std::vector<Path>& paths) {
  append_raw(key, paths.size());
  for (const Path& path : paths) {
    append_list(key, path.links);
    append_raw_all(key, path.bw, path.type);
  }
}
template <class Row>
void append_list(std::string& key, const std::vector<Row>& rows) {
  append_raw(key, rows.size());
  for (const Row& row : rows) append_list(key, row);
}
std::string search_key(const NodeGraph& g, const SearchContext& c, const SearchRequest& r) {
  std::string key;
  append_raw(key, g.nodes.size());
  for (const Node& n : g.nodes) {
    append_raw_all(key, n.kind, n.cc, n.index);
    append_list(key, n.out);
  }
  append_raw(key, g.links.size());
  for (const Link& l : g.links) append_raw_all(key, l.from, l.to, l.type, l.bw);
  append_list(key, g.gpus);
  append_list(key, g.nets);
  append_list(key, g.net_bw);
  append_raw_all(key, g.nvs, g.cpu);
  append_list(key, g.gpu_gpu);
  append_list(key, g.gpu_net);
  append_list(key, g.net_gpu);
  append_list(key, g.nvs_gpu);
  append_list(key, g.gpu_nvs);
  append_list(key, g.net_local_gpu);
  append_list(key, g.gpu_nets);
  append_list(key, g.net_near_gpus);
  append_list(key, g.reverse);
  append_list(key, g.gpu_pci);
  append_raw_all(key, c.constants, c.cc_min, c.inter);  // one constants table per release, kept for the process
  append_raw_all(key, r.pattern, r.min_channels, r.max_channels, r.collnet);
  return key;
}

// Searches done, by search_key: a search depends on its key alone. A command builds several
// models of one machine (NCCL's choice, the schedules' channel orders, the step's pricer), the
// bottleneck line five to seven what-if machines, most of which leave one node's graph as it
// is, and a sweep machines that differ in their number of nodes: each distinct node is searched
// once.
OnceMap<std::string, SearchGraph>& searches() {
  static OnceMap<std::string, SearchGraph> done(256);
  return done;
}

}  // namespace

SearchGraph search_channels(const NodeGraph& node, const SearchContext& context, const SearchRequest& request) {
  return searches().get(search_key(node, context, request), [&] { return search_once(node, context, request); });
}

void forget_searches() { searches().clear(); }

}  // namespace colltune::sim::nccl
