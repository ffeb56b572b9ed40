// NCCL's tuning model (src/graph/tuning.cc, ncclTopoTuneModel), per collective, algorithm and
// protocol:
//  bandwidth  bw = a channel's speed (bwIntra on up to 2 nodes and for CollNet, else bwInter),
//             busBw = nChannels x bw, then the refinements:
//               Ring LL  min(llMaxBw, busBw/2);  Ring LL128  min(0.92 busBw, nCh x ringLL128 cap)
//               Tree (allreduce)  min(0.92 busBw, nCh x tree cap), then LL  min(busBw/3.8, llMaxBw),
//               LL128  min(busBw x (7/9 on one node, 120/128 on more), nCh x treeLL128 cap);
//               x 0.85 for the simple tree pattern; PAT x 0.75;
//               NVLS  per channel min(bwIntra x efficiency x (n-1)/n x (2 for allreduce, else
//               (ppn-1)/ppn), bwInter (x2 for NVLSTree on 2 nodes), NVLSTree cap);
//               CollNetDirect  divided by the GPU/NIC factor (x0.85 on sm90+);
//             and the bus-to-algorithm factor nRanks/nsteps (Ring, NVLS), 0.5 (others).
//  latency    base latency + per algorithm: Ring (nsteps - nInter) x intraLat + nInter x interLat,
//             Tree 2 ((ppn-1) intraLat + log2(nNodes) interLat), NVLS intraLat (+ interLat),
//             NVLSTree intraLat + 2 log2(nNodes) interLat, CollNet and PAT their own.
//  enablement NCCL_ALGO/NCCL_PROTO; LL128 only where NCCL allows it; NVLSTree off on one node;
//             CollNet (and multi-node NVLS) only with CollNet enabled; CollNetDirect only with
//             an NVSwitch.
#include "nccl_tuning.hpp"

#include <algorithm>
#include <limits>

#include "nccl_topo.hpp"

namespace colltune::sim::nccl {
namespace {

constexpr int kTree = 0, kRing = 1, kCnDirect = 2, kCnChain = 3, kNvls = 4, kNvlsTree = 5, kPat = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kBcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;

struct Ctx {
  const TuneInput& in;
  const NcclConstants& k;
  const NcclSystem& sys;
  int cc_index = 0;
  int node_index = 0;
  double ll_max_bw = 0, per_ch_tree = 0, per_ch_ring_ll128 = 0, per_ch_tree_ll128 = 0, per_ch_nvls_tree = 0;
  float ppn = 1;
  const ChannelPlan& graph(int a) const { return *in.graphs[static_cast<std::size_t>(a)]; }
};

bool ag_or_rs(int c) { return c == kAllGather || c == kReduceScatter; }

// Which cells NCCL computes at all (the `continue`s at the top of its loops).
bool computed(const Ctx& x, int c, int a, int p) {
  if ((c == kBcast || c == kReduce) && a != kRing) return false;
  if (ag_or_rs(c) && a != kPat && a != kRing && a != kNvls && a != kCnDirect) return false;
  if (c == kAllReduce && a == kPat) return false;
  if ((a == kNvls || a == kNvlsTree) && p != kSimple) return false;
  if (a == kPat) {
    // ncclPatEnable: sm60+, one GPU per node; PAT exists from 2.23.
    if (!x.k.rules.pat || p != kSimple) return false;
    if (x.sys.cc_min < 60 || x.sys.nnodes != x.sys.nranks) return false;
  }
  return true;
}

// NVLS / NVLSTree per-channel bus bandwidth; negative when NCCL skips the cell (< 2 channels).
float nvls_bw(const Ctx& x, int c, int a) {
  const ChannelPlan& g = x.graph(a);
  if (!x.k.rules.nvls_efficiency) {
    const float inter = a == kNvlsTree && x.sys.nnodes > 2 ? static_cast<float>(g.bw_inter) / 2 : static_cast<float>(g.bw_inter);
    return std::min(static_cast<float>(g.bw_intra), inter);
  }
  if (g.channels < 2) return -1;
  float intra = static_cast<float>(g.bw_intra) * x.k.nvls_efficiency[static_cast<std::size_t>(x.cc_index)] *
                static_cast<float>(g.channels - 1) / static_cast<float>(g.channels);
  intra *= c == kAllReduce ? 2.0f : (x.ppn - 1) / x.ppn;
  const float inter = static_cast<float>(g.bw_inter) * (x.sys.nnodes <= 2 && a == kNvlsTree ? 2.0f : 1.0f);
  const float cap = a == kNvlsTree ? static_cast<float>(x.per_ch_nvls_tree) : std::numeric_limits<float>::max();
  return std::min({intra, inter, cap});
}

float collnet_direct_bw(const Ctx& x, int c, float bus_bw, float bw) {
  const ChannelPlan& g = x.graph(kCnDirect);
  if (ag_or_rs(c)) {
    if (x.k.rules.collnet_ag_rs_interpolated) {
      float out = x.ppn * bw;
      if (x.sys.nnodes > 1 && x.ppn > static_cast<float>(x.in.collnet_heads)) out = 0;
      const float w = (x.ppn - 1) / (8 - 1);
      return out * (w * 0.85f + (1 - w) * 0.95f);
    }
    return x.ppn * std::min(static_cast<float>(g.bw_intra), static_cast<float>(g.bw_inter) * 0.9f);
  }
  float factor = x.ppn / static_cast<float>(g.channels);  // GPUs per NIC
  factor -= (factor - 1) / 2;
  bus_bw /= factor;
  if (x.sys.cc_min >= 90) bus_bw *= .85f;
  return bus_bw;
}

// The refinements of busBw (tuning.cc "Various model refinements").
float refine(const Ctx& x, int c, int a, int p, float bus_bw, float bw) {
  const int nch = x.graph(a).channels;
  if (a == kRing && p == kLL) bus_bw = static_cast<float>(std::min(x.ll_max_bw, bus_bw * .5));
  if (a == kRing && p == kLL128) {
    const double eff = x.k.rules.ring_ll128_ppn1_discount && x.ppn < 2 ? 0.7 : 0.92;
    bus_bw = static_cast<float>(std::min(bus_bw * eff, nch * x.per_ch_ring_ll128));
  }
  if (a == kTree && c == kAllReduce) bus_bw = static_cast<float>(std::min(bus_bw * .92, nch * x.per_ch_tree));
  if (a == kTree && p == kLL) bus_bw = static_cast<float>(std::min(bus_bw * 1.0 / 3.8, x.ll_max_bw));
  if (a == kTree && p == kLL128)
    bus_bw = static_cast<float>(
        std::min(bus_bw * (x.sys.nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * x.per_ch_tree_ll128));
  if (a == kTree && x.graph(kTree).simple_tree) bus_bw *= .85f;
  if (a == kPat) bus_bw *= .75f;
  if ((a == kCnDirect || a == kCnChain) && p != kSimple) bus_bw = 0;
  if (a == kCnDirect && p == kSimple) bus_bw = collnet_direct_bw(x, c, bus_bw, bw);
  // AllGather/ReduceScatter over NVLS or CollNetDirect on several nodes need CollNet and one
  // NIC head per local GPU.
  if ((a == kNvls || a == kCnDirect) && p == kSimple && ag_or_rs(c) && x.sys.nnodes > 1 &&
      x.k.rules.nvls_ag_rs_multinode)
    if (!x.sys.collnet_support || x.sys.ranks_per_node > x.in.collnet_heads) bus_bw = 0;
  return bus_bw;
}

float bus_to_alg(const Ctx& x, int c, int a, float bus_bw) {
  const int n = x.sys.nranks;
  const int nsteps = c == kAllReduce ? 2 * (n - 1) : ag_or_rs(c) ? n - 1 : n;
  const bool old = !x.k.rules.nvls_efficiency;
  if (old ? (a == kCnDirect && ag_or_rs(c)) : (a != kRing && ag_or_rs(c))) return bus_bw;
  float ratio = 1.0f;
  if (a == kRing || (!old && (a == kNvls || a == kNvlsTree))) ratio *= static_cast<float>(1.0 * n / nsteps);
  else if (old && (a == kNvls || a == kNvlsTree)) ratio *= static_cast<float>(5.0 / 6.0);
  else ratio *= .5f;
  return bus_bw * ratio;
}

float net_overhead(const Ctx& x) {
  if (x.in.net_overhead_us >= 0) return static_cast<float>(x.in.net_overhead_us);
  return static_cast<float>(is_amd(x.sys.cpu) ? x.k.net_overhead_amd_us : x.k.net_overhead_intel_us);
}

// A cell's latencies before NCCL's formula combines them: the base latency, one step inside a
// node (on several nodes a ring step costs at least the network overhead) and one across nodes.
LatencyParts step_latencies(const Ctx& x, int c, int a, int p) {
  const NcclConstants& k = x.k;
  const auto hw_of = [&](int algo) { return x.graph(algo).type_intra == NcclPath::nvl ? 0 : 1; };
  const auto hw = [&](int h, int algo, int proto) {
    return static_cast<float>(k.hw_lat[static_cast<std::size_t>(h)][static_cast<std::size_t>(algo)][static_cast<std::size_t>(proto)]);
  };
  LatencyParts l;
  l.base = static_cast<float>(k.base_lat[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)]);
  l.intra = hw(hw_of(a), a, p);
  l.inter = x.ppn == 1 && k.rules.ppn1_tree_net_latency ? hw(2, kTree, p) : hw(2, a, p);
  l.inter += static_cast<float>(x.in.net_latency_us);
  if (p == kSimple) l.inter += static_cast<float>(x.in.net_latency_us);  // the flush
  if (a == kRing && c != kReduce && c != kBcast && x.sys.nnodes > 1) {
    const float overhead = net_overhead(x) * (p == kSimple ? static_cast<float>(k.net_overhead_simple_factor) : 1.0f);
    l.intra = std::max(l.intra, overhead);
  }
  if (a == kRing && (c == kReduce || c == kBcast)) l.intra = l.inter = hw(x.sys.nnodes == 1 ? hw_of(a) : 2, a, p);
  return l;
}

float latency(const Ctx& x, int c, int a, int p) {
  const NcclConstants& k = x.k;
  const ChannelPlan& g = x.graph(a);
  const int n = x.sys.nranks, nodes = x.sys.nnodes;
  const int nsteps = c == kAllReduce ? 2 * (n - 1) : ag_or_rs(c) ? n - 1 : n;
  const LatencyParts parts = step_latencies(x, c, a, p);
  const float lat = parts.base, intra = parts.intra, inter = parts.inter;
  const long log_nodes = nccl_log2i(nodes, true);
  const int ppn = n / nodes;
  if (a == kRing) {
    if (c == kReduce || c == kBcast) {
      float l = intra;
      if (g.same_channels) return lat + l;
      if (p == kSimple)
        l = static_cast<float>(k.hw_lat[nodes == 1 ? static_cast<std::size_t>(g.type_intra == NcclPath::nvl ? 0 : 1) : 2]
                                       [kTree][static_cast<std::size_t>(p)]);
      return lat + static_cast<float>(nsteps) * l;
    }
    int inter_steps = 0;
    if (k.rules.ring_inter_steps_exact) inter_steps = nodes == 1 ? 0 : c == kAllReduce ? 2 * (nodes - 1) : nodes - 1;
    else inter_steps = c == kAllReduce ? (nodes > 1 ? 2 * nodes : 0) : ag_or_rs(c) ? nodes - 1 : nodes;
    return lat + static_cast<float>(nsteps - inter_steps) * intra + static_cast<float>(inter_steps) * inter;
  }
  if (a == kTree) return c == kAllReduce ? lat + 2 * (static_cast<float>(ppn - 1) * intra + static_cast<float>(log_nodes) * inter) : lat;
  if (a == kCnDirect)
    return lat + 2 * (static_cast<float>(std::min(1, ppn - 1)) * intra + static_cast<float>(ppn - 1) * 0.4f) + inter;
  if (a == kCnChain) return lat + 2 * static_cast<float>(ppn - 1) * intra + inter;
  if (a == kNvls) return intra + (nodes > 1 ? inter : 0);
  if (a == kNvlsTree) return lat + intra + 2 * static_cast<float>(log_nodes) * inter;
  if (a == kPat && ag_or_rs(c)) return lat + static_cast<float>(log_nodes) * (inter / 3.5f) + static_cast<float>(n) * 2.8f;
  return lat;
}

// The latency of a cell as NCCL's formula counts it (NcclModel::latency_parts): a per-call part
// and per-step latencies with the number of steps inside a node and across nodes, such that
// base + intra_steps x intra + inter_steps x inter is latency() (up to float rounding).
LatencyParts call_and_step_latencies(const Ctx& x, int c, int a, int p) {
  LatencyParts l = step_latencies(x, c, a, p);
  const int n = x.sys.nranks, nodes = x.sys.nnodes, ppn = n / nodes;
  const float log_nodes = static_cast<float>(nccl_log2i(nodes, true));
  const bool ar = c == kAllReduce;
  if (a == kRing && (ar || ag_or_rs(c))) {
    const int nsteps = ar ? 2 * (n - 1) : n - 1;
    int inter = 0;
    if (x.k.rules.ring_inter_steps_exact) inter = nodes == 1 ? 0 : ar ? 2 * (nodes - 1) : nodes - 1;
    else inter = ar ? (nodes > 1 ? 2 * nodes : 0) : nodes - 1;
    l.intra_steps = static_cast<float>(nsteps - inter);
    l.inter_steps = static_cast<float>(inter);
  } else if (a == kTree && ar) {
    l.intra_steps = 2.0f * static_cast<float>(ppn - 1);
    l.inter_steps = 2.0f * log_nodes;
  } else if (a == kNvls) {  // NCCL's NVLS latency replaces the base latency
    l.base = 0;
    l.intra_steps = 1;
    l.inter_steps = nodes > 1 ? 1.0f : 0.0f;
  } else if (a == kNvlsTree) {
    l.intra_steps = 1;
    l.inter_steps = 2.0f * log_nodes;
  } else if (a == kCnDirect) {
    l.base += 2 * static_cast<float>(ppn - 1) * 0.4f;
    l.intra_steps = 2.0f * static_cast<float>(std::min(1, ppn - 1));
    l.inter_steps = 1;
  } else if (a == kCnChain) {
    l.intra_steps = 2.0f * static_cast<float>(ppn - 1);
    l.inter_steps = 1;
  } else {  // PAT, and Ring for broadcast and reduce: the whole latency per call
    l = {latency(x, c, a, p), 0, 0, 0, 0};
  }
  return l;
}

// NCCL_ALGO/NCCL_PROTO and NCCL's own rules (the enable/disable pass after the tables).
bool ll128_allowed(const Ctx& x, int a) {
  const ChannelPlan& g = x.graph(a);
  const NcclModelRules& r = x.k.rules;
  const int lo = x.sys.cc_min, hi = x.sys.cc_max;
  bool ok = lo >= 90 ? g.type_inter <= NcclPath::pxn : g.type_inter <= NcclPath::pxb;
  ok = ok && g.type_intra <= NcclPath::nvb;
  ok = ok && (lo == hi || (r.ll128_mixed_hopper && lo >= 90));
  if (r.ll128_known_arch_only) return ok && (lo == 70 || lo == 80 || lo == 90);
  return ok && lo >= 70;
}

bool algo_disabled(const Ctx& x, int a) {
  const NcclSystem& s = x.sys;
  if (s.nnodes == 1 && a == kNvlsTree) return true;
  if (!s.collnet_support && (a == kCnDirect || a == kCnChain || (a == kNvls && s.nnodes > 1))) return true;
  return s.nvswitches == 0 && a == kCnDirect;
}

void apply_enables(const Ctx& x, TuneTables& t) {
  for (int c = 0; c < kNcclNumColls; ++c) {
    const auto& algo_on = x.in.enables.algo[static_cast<std::size_t>(c)];
    const auto& proto_on = x.in.enables.proto[static_cast<std::size_t>(c)];
    for (int a = 0; a < kNcclNumAlgos; ++a) {
      const bool algo_ok = algo_on[static_cast<std::size_t>(a)] != 0 && !algo_disabled(x, a);
      for (int p = 0; p < kNcclNumProtos; ++p) {
        int on = proto_on[static_cast<std::size_t>(p)];
        if (on == 2 && p == kLL128) on = ll128_allowed(x, a) ? 1 : 0;
        if (on == 0 || !algo_ok) t.bw[static_cast<std::size_t>(c)][static_cast<std::size_t>(a)][static_cast<std::size_t>(p)] = 0;
      }
    }
  }
}

// Threads per channel (maxThreads) and the bytes per thread below which NCCL drops channels.
void set_threads(const Ctx& x, TuneTables& t) {
  const NcclConstants& k = x.k;
  const ChannelPlan& ring = x.graph(kRing);
  const int simple_ring = ring.bw_intra * ring.channels <= k.pci_bw ? 256 : k.simple_max_threads;
  auto& mt = t.max_threads;
  mt[kRing][kSimple] = simple_ring;
  mt[kTree][kSimple] = k.simple_max_threads;
  for (int a : {kCnDirect, kCnChain, kNvls, kNvlsTree}) mt[static_cast<std::size_t>(a)][kSimple] = k.max_threads;
  mt[kRing][kLL] = mt[kTree][kLL] = k.ll_max_threads;
  mt[kRing][kLL128] = mt[kTree][kLL128] = k.ll128_max_threads;
  for (auto& row : t.thread_threshold) row = k.thread_threshold;
  t.thread_threshold[kRing][kLL] *= x.sys.nranks;
  t.thread_threshold[kCnDirect][kSimple] = k.collnet_thread_threshold;
  t.thread_threshold[kCnChain][kSimple] = k.collnet_thread_threshold;
}

void fill_cells(const Ctx& x, TuneTables& t) {
  for (int c = 0; c < kNcclNumColls; ++c)
    for (int a = 0; a < kNcclNumAlgos; ++a)
      for (int p = 0; p < kNcclNumProtos; ++p) {
        if (!computed(x, c, a, p)) continue;
        const ChannelPlan& g = x.graph(a);
        const bool collnet = a == kCnDirect || a == kCnChain;
        float bw = static_cast<float>(x.sys.nnodes <= 2 || collnet ? g.bw_intra : g.bw_inter);
        if (a == kNvls || a == kNvlsTree) {
          bw = nvls_bw(x, c, a);
          if (bw < 0) continue;
        }
        float bus_bw = static_cast<float>(g.channels) * bw;
        bus_bw = refine(x, c, a, p, bus_bw, bw);
        const auto ci = static_cast<std::size_t>(c), ai = static_cast<std::size_t>(a), pi = static_cast<std::size_t>(p);
        t.bw[ci][ai][pi] = bus_to_alg(x, c, a, bus_bw);
        t.lat[ci][ai][pi] = latency(x, c, a, p);
        t.parts[ci][ai][pi] = call_and_step_latencies(x, c, a, p);
      }
}

}  // namespace

long nccl_log2i(long n, bool zero_is_minus_one) {
  if (n <= 0) return zero_is_minus_one ? -1 : 0;
  long l = 0;
  while (n >>= 1) ++l;
  return l;
}

TuneTables tune_model(const TuneInput& in) {
  Ctx x{in, *in.constants, *in.system};
  const NcclSystem& s = *in.system;
  TuneTables t;
  if (s.nranks <= 1) return t;
  x.cc_index = comp_cap_index(s.cc_min);
  x.node_index = s.nnodes <= 2 ? s.nnodes - 1 : 2;
  // LL cap: by GPU on one node, by CPU vendor (Intel row 0, AMD row 1) on several.
  const int ll_row = s.nnodes == 1 ? x.cc_index : is_amd(s.cpu) ? 1 : 0;
  const auto cap = [&](const NcclCapTable& table, int row) {
    return table[static_cast<std::size_t>(row)][static_cast<std::size_t>(x.node_index)];
  };
  x.ll_max_bw = cap(x.k.ll_max_bw, ll_row);
  x.per_ch_tree = cap(x.k.per_ch_max_tree_bw, x.cc_index);
  x.per_ch_ring_ll128 = cap(x.k.per_ch_max_ring_ll128_bw, x.cc_index);
  x.per_ch_tree_ll128 = cap(x.k.per_ch_max_tree_ll128_bw, x.cc_index);
  x.per_ch_nvls_tree = cap(x.k.per_ch_max_nvls_tree_bw, x.cc_index);
  x.ppn = static_cast<float>(s.nranks) / static_cast<float>(s.nnodes);
  fill_cells(x, t);
  apply_enables(x, t);
  set_threads(x, t);
  return t;
}

}  // namespace colltune::sim::nccl
