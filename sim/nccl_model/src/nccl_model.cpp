// NcclModel construction: the communicator's shape, one node's NCCL topology, the channel
// searches NCCL runs at init (src/init.cc: ring, tree, CollNet chain and direct, NVLS), the
// channel counts of the connection setup (src/graph/connect.cc, ncclTopoPostset) and the
// tuning tables (src/graph/tuning.cc).
#include "colltune/sim/nccl_model.hpp"

#include <algorithm>
#include <array>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "nccl_search.hpp"
#include "nccl_topo.hpp"
#include "nccl_tuning.hpp"

namespace colltune::sim {
namespace {

constexpr std::array<std::string_view, 12> kPathNames{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                                      "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};

// The class `host`'s CPUs have for NCCL's model (the first CPU device naming one), else the
// model's default, a Sapphire Rapids host as in a DGX H100.
NcclCpu host_cpu_class(const topo::Topology& t, int host) {
  for (topo::VertexId v = 0; v < t.num_devices(); ++v) {
    const topo::Device& d = t.device(v);
    if (d.host == host && d.kind == topo::DeviceKind::cpu && d.nccl_cpu) return *d.nccl_cpu;
  }
  return NcclCpu::intel_srp;
}

// The ranks of the node of rank 0: rank 0's host, and of it the GPUs that rank 0's GPU reaches
// through the host's own links (GPUs of one host joined only through the network, as in the
// flat preset, are separate nodes to NCCL).
std::vector<int> first_node_ranks(const topo::Topology& t, int nranks) {
  const int host = t.host_of_rank(0);
  std::vector<bool> reached(t.num_devices(), false);
  std::vector<topo::VertexId> todo{t.device_of_rank(0)};
  reached[todo.front()] = true;
  while (!todo.empty()) {
    const topo::VertexId v = todo.back();
    todo.pop_back();
    for (std::size_t l : t.out_links(v)) {
      const topo::VertexId w = t.link_target(l);
      if (reached[w] || t.link(l).kind == topo::LinkKind::net || t.device(w).host != host) continue;
      reached[w] = true;
      todo.push_back(w);
    }
  }
  std::vector<int> ranks;
  for (int r = 0; r < nranks; ++r)
    if (t.host_of_rank(r) == host && reached[t.device_of_rank(r)]) ranks.push_back(r);
  return ranks;
}

// Every host must hold a whole number of nodes like the first one.
void check_uniform(const topo::Topology& t, int nranks, int ppn) {
  if (nranks % ppn != 0)
    throw Error("NCCL's model: " + std::to_string(nranks) + " ranks are not a whole number of nodes of " +
                std::to_string(ppn) + " GPUs (the node of rank 0)");
  std::vector<int> per_host(static_cast<std::size_t>(t.num_hosts()), 0);
  for (int r = 0; r < nranks; ++r) {
    const int host = t.host_of_rank(r);
    if (host < 0 || host >= t.num_hosts())
      throw Error("NCCL's model: rank " + std::to_string(r) + " runs on a device outside every host");
    ++per_host[static_cast<std::size_t>(host)];
  }
  for (int h = 0; h < t.num_hosts(); ++h)
    if (per_host[static_cast<std::size_t>(h)] % ppn != 0)
      throw Error("NCCL's model needs nodes of one shape: host '" + t.host_name(h) + "' holds " +
                  std::to_string(per_host[static_cast<std::size_t>(h)]) + " of the ranks, the node of rank 0 " +
                  std::to_string(ppn));
}

bool network_has_sharp(const topo::Topology& t) {
  for (topo::VertexId v = 0; v < t.num_devices(); ++v) {
    const topo::Device& d = t.device(v);
    if (d.kind == topo::DeviceKind::net_switch && d.switch_reduction == topo::SwitchReduction::sharp) return true;
  }
  return false;
}

ChannelPlan to_plan(const nccl::SearchGraph& g) {
  ChannelPlan p;
  p.channels = g.nchannels;
  p.bw_intra = g.bw_intra;
  p.bw_inter = g.bw_inter;
  p.type_intra = g.type_intra;
  p.type_inter = g.type_inter;
  p.same_channels = g.same_channels;
  p.cross_nic = g.cross_nic != 0;
  p.simple_tree = g.pattern == nccl::Pattern::tree;
  p.orders = g.intra;
  // An NVLS channel names only its head GPU: every GPU takes part, the others in index order.
  for (auto& order : p.orders) {
    if (order.empty() || std::find(order.begin() + 1, order.end(), -1) == order.end()) continue;
    std::size_t at = 1;
    for (int gpu = 0; gpu < static_cast<int>(order.size()); ++gpu)
      if (gpu != order[0]) order[at++] = gpu;
  }
  for (const auto& io : g.inter) {
    p.nic_in.push_back(io[0]);
    p.nic_out.push_back(io[1]);
  }
  return p;
}

}  // namespace

std::string_view to_string(NcclPath path) { return kPathNames[static_cast<std::size_t>(path)]; }

double nccl_bus_factor(NcclColl coll, int nranks) {
  const double n = nranks;
  if (coll == NcclColl::allreduce) return 2 * (n - 1) / n;
  if (coll == NcclColl::allgather || coll == NcclColl::reduce_scatter) return (n - 1) / n;
  return 1.0;
}

NcclModel::NcclModel(const topo::Topology& topology, NcclVersion version, int nranks)
    : NcclModel(topology, [&] {
        NcclOptions o;
        o.version = version;
        o.nranks = nranks;
        return o;
      }()) {}

NcclModel::NcclModel(const topo::Topology& topology, NcclOptions options)
    : options_(std::move(options)), constants_(&nccl_constants(options_.version)) {
  const int nranks = options_.nranks > 0 ? options_.nranks : topology.num_ranks();
  if (nranks > topology.num_ranks())
    throw Error("NCCL's model: " + std::to_string(nranks) + " ranks asked, the topology has " +
                std::to_string(topology.num_ranks()));
  const std::vector<int> node = first_node_ranks(topology, nranks);
  const int ppn = static_cast<int>(node.size());
  check_uniform(topology, nranks, ppn);
  system_.nranks = nranks;
  system_.ranks_per_node = ppn;
  system_.nnodes = nranks / ppn;
  system_.cpu = options_.cpu.value_or(host_cpu_class(topology, topology.host_of_rank(node.front())));
  system_.cc_min = 1 << 30;
  for (int r = 0; r < nranks; ++r) {
    int cc = topology.device(topology.device_of_rank(r)).compute_capability;
    if (cc == 0) cc = options_.compute_capability;
    if (cc == 0)
      throw Error("NCCL's model needs the GPUs' compute capability; rank " + std::to_string(r) + "'s device '" +
                  topology.device(topology.device_of_rank(r)).id + "' has none");
    system_.cc_min = std::min(system_.cc_min, cc);
    system_.cc_max = std::max(system_.cc_max, cc);
  }
  const nccl::NodeGraph graph = nccl::build_node_graph(topology, node, system_.cpu, system_.nnodes > 1, options_.pxn,
                                                       options_.compute_capability);
  if (system_.nnodes > 1 && graph.num_nets() == 0)
    throw Error("NCCL's model: the node of rank 0 has no NIC to reach the other " +
                std::to_string(system_.nnodes - 1) + " nodes");
  system_.nvswitches = graph.nvs >= 0 ? 1 : 0;
  system_.nics = graph.num_nets();
  const nccl::SearchBounds bounds = nccl::search_bounds(graph, system_.nnodes > 1);
  system_.max_bw = bounds.max_bw;
  system_.total_bw = bounds.total_bw;
  system_.switch_reduces = topo::nvls_switch_of(topology, topology.host_of_rank(0)).has_value();
  system_.network_reduces = network_has_sharp(topology);
  system_.nvls_support = system_.switch_reduces && system_.cc_min >= 90 && ppn >= 2;
  system_.collnet_support = options_.collnet && system_.nnodes >= 2 && system_.network_reduces;
  search(graph);
  tune();
}

void NcclModel::search(const nccl::NodeGraph& graph) {
  using nccl::Pattern;
  const NcclConstants& k = *constants_;
  const nccl::SearchContext ctx{constants_, system_.cc_min, system_.nnodes > 1};
  nccl::SearchGraph ring = nccl::search_channels(graph, ctx, {Pattern::ring, 1, k.max_channels / 2, false});
  nccl::SearchGraph tree = nccl::search_channels(graph, ctx, {Pattern::balanced_tree, ring.nchannels, ring.nchannels, false});
  nccl::SearchGraph chain, direct, nvls;
  if (system_.collnet_support) {
    chain = nccl::search_channels(graph, ctx, {Pattern::tree, ring.nchannels, ring.nchannels, true});
    direct = nccl::search_channels(graph, ctx, {Pattern::collnet_direct, 1, k.max_channels, true});
    if (chain.nchannels == 0) system_.collnet_support = false;
  }
  if (system_.nvls_support) nvls = nccl::search_channels(graph, ctx, {Pattern::nvls, 1, k.max_channels, false});
  if (nvls.nchannels == 0) system_.nvls_support = false;
  // init.cc: rings and trees run on the same channels.
  const int shared = std::min(ring.nchannels, tree.nchannels);
  ring.nchannels = tree.nchannels = shared;
  ring.intra.resize(static_cast<std::size_t>(shared));
  ring.inter.resize(static_cast<std::size_t>(shared));
  tree.intra.resize(static_cast<std::size_t>(shared));
  tree.inter.resize(static_cast<std::size_t>(shared));
  plans_[index_of(NcclAlgo::tree)] = plans_[index_of(NcclAlgo::pat)] = to_plan(tree);
  plans_[index_of(NcclAlgo::ring)] = to_plan(ring);
  plans_[index_of(NcclAlgo::collnet_chain)] = to_plan(chain);
  plans_[index_of(NcclAlgo::collnet_direct)] = to_plan(direct);
  plans_[index_of(NcclAlgo::nvls)] = plans_[index_of(NcclAlgo::nvls_tree)] = to_plan(nvls);
  collnet_heads_ = direct.nchannels;
  set_comm_channels(shared);
}

namespace {

// connect.cc's copyChannels: channels [from, to) (at most MAXCHANNELS) become copies of channels
// [0, to - from): channel c of channel c - from. `sources` holds each channel's search channel.
void copy_channels(std::vector<int>& sources, int to, int max_channels) {
  const int from = static_cast<int>(sources.size());
  if (from == 0) return;  // nothing to copy (no search channel)
  for (int c = from; c < std::min(to, max_channels); ++c)
    sources.push_back(sources[static_cast<std::size_t>(c - from)]);
}

}  // namespace

// connect.cc (ncclTopoPostset) and transport/nvls.cc: the channels the kernels run on, each a
// copy of a search channel.
void NcclModel::set_comm_channels(int search_channels) {
  const NcclConstants& k = *constants_;
  const NcclSystem& s = system_;
  const NcclChannelEnv& env = options_.channel_env;
  // init.cc: a minimum of CTAs above the maximum becomes the maximum.
  const int min_ctas = env.max_ctas > 0 ? std::min(env.min_ctas, env.max_ctas) : env.min_ctas;
  int nvls = !s.nvls_support   ? 0
             : s.cc_min >= 100 ? (s.nnodes > 1 ? k.nvls_channels_sm100 : k.nvls_channels_sm100_one_node)
                               : k.nvls_channels_sm90;
  if (nvls > 0 && env.max_ctas > 0) nvls = std::min(nvls, std::min(env.max_ctas, k.max_channels));
  if (nvls > 0 && min_ctas > 0) nvls = std::max(nvls, std::min(min_ctas, k.max_channels));
  system_.nvls_channels = nvls;
  std::vector<int>& sources = system_.comm_channel_source;
  sources.clear();
  for (int c = 0; c < search_channels; ++c) sources.push_back(c);
  copy_channels(sources, 2 * search_channels, k.max_channels);  // "Duplication should be complete now"
  const ChannelPlan& chain = plans_[index_of(NcclAlgo::collnet_chain)];
  const auto nc = [&] { return static_cast<int>(sources.size()); };
  if (s.collnet_support && chain.bw_intra > chain.bw_inter && s.nranks > s.nnodes)
    copy_channels(sources, nc() + nc() / 2, k.max_channels);
  const bool hopper = k.rules.hopper_dup_all_sm90_plus ? s.cc_min >= 90 : s.cc_min == 90;
  if (hopper && s.nnodes > 1 && plans_[index_of(NcclAlgo::ring)].bw_intra > 45.0 && nc() < 16)
    copy_channels(sources, 2 * nc(), k.max_channels);
  // NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS keep the first channels, then NCCL_MIN_NCHANNELS /
  // NCCL_MIN_CTAS copy them up ("combining max, then min").
  int most = k.max_channels;
  if (env.max_nchannels > 0) most = std::min(most, env.max_nchannels);
  if (env.max_ctas > 0) most = std::min(most, env.max_ctas);
  if (nc() > most) sources.resize(static_cast<std::size_t>(std::max(most, 1)));
  copy_channels(sources, std::max(env.min_nchannels, min_ctas), k.max_channels);
  if (k.rules.nvls_raises_comm_channels && s.nvls_support && nc() < nvls) copy_channels(sources, nvls, k.max_channels);
  system_.comm_channels = nc();
}

std::vector<std::vector<int>> NcclModel::comm_orders(NcclAlgo algo) const {
  const ChannelPlan& plan = channels(algo);
  const std::vector<int>& sources = system_.comm_channel_source;
  std::vector<int> runs(plan.orders.size(), 0);
  for (int c : sources)
    if (c >= 0 && static_cast<std::size_t>(c) < runs.size()) ++runs[static_cast<std::size_t>(c)];
  if (std::all_of(runs.begin(), runs.end(), [&](int n) { return n == runs.front(); })) return plan.orders;
  std::vector<std::vector<int>> out;
  for (int c : sources)
    if (c >= 0 && static_cast<std::size_t>(c) < plan.orders.size())
      out.push_back(plan.orders[static_cast<std::size_t>(c)]);
  return out;
}

bool is_nccl_channel_setting(std::string_view name) {
  return name == "NCCL_MIN_NCHANNELS" || name == "NCCL_MAX_NCHANNELS" || name == "NCCL_MIN_NRINGS" ||
         name == "NCCL_MAX_NRINGS" || name == "NCCL_MIN_CTAS" || name == "NCCL_MAX_CTAS";
}

void set_nccl_channel_setting(NcclChannelEnv& env, std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  const std::string_view name = assignment.substr(0, eq);
  if (eq == std::string_view::npos || !is_nccl_channel_setting(name))
    throw Error("'" + parse::shown(assignment) +
                "': expected NAME=COUNT, NAME one of NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, NCCL_MIN_CTAS, "
                "NCCL_MAX_CTAS (or the legacy NCCL_MIN_NRINGS, NCCL_MAX_NRINGS)");
  constexpr int kMostChannels = 1024;  // NCCL caps a request at its MAXCHANNELS (32 or 64)
  const int value = parse::integer<int>(assignment.substr(eq + 1), name, 1, kMostChannels);
  if (name == "NCCL_MIN_NCHANNELS" || name == "NCCL_MIN_NRINGS")
    env.min_nchannels = value;
  else if (name == "NCCL_MAX_NCHANNELS" || name == "NCCL_MAX_NRINGS")
    env.max_nchannels = value;
  else if (name == "NCCL_MIN_CTAS")
    env.min_ctas = value;
  else
    env.max_ctas = value;
}

std::vector<std::string> setting_lines(const NcclChannelEnv& env) {
  std::vector<std::string> out;
  const auto add = [&](const char* name, int v) {
    if (v > 0) out.push_back(std::string(name) + "=" + std::to_string(v));
  };
  add("NCCL_MIN_NCHANNELS", env.min_nchannels);
  add("NCCL_MAX_NCHANNELS", env.max_nchannels);
  add("NCCL_MIN_CTAS", env.min_ctas);
  add("NCCL_MAX_CTAS", env.max_ctas);
  return out;
}

std::string to_string(const NcclChannelEnv& env) {
  std::string out;
  for (const std::string& line : setting_lines(env)) out += (out.empty() ? "" : ", ") + line;
  return out;
}

void NcclModel::tune() {
  nccl::TuneInput in;
  in.constants = constants_;
  in.system = &system_;
  for (int a = 0; a < kNcclNumAlgos; ++a) in.graphs[static_cast<std::size_t>(a)] = &plans_[static_cast<std::size_t>(a)];
  in.collnet_heads = collnet_heads_;
  in.net_overhead_us = options_.net_overhead_us;
  in.net_latency_us = options_.net_latency_us;
  in.enables = nccl::parse_enables(options_.algo_env, options_.proto_env);
  algo_on_ = in.enables.algo;
  proto_on_ = in.enables.proto;
  const nccl::TuneTables t = nccl::tune_model(in);
  bw_ = t.bw;
  lat_ = t.lat;
  for (std::size_t c = 0; c < t.parts.size(); ++c)
    for (std::size_t a = 0; a < t.parts[c].size(); ++a)
      for (std::size_t p = 0; p < t.parts[c][a].size(); ++p) {
        const nccl::LatencyParts& l = t.parts[c][a][p];
        lat_parts_[c][a][p] = {l.base, l.intra, l.inter, l.intra_steps, l.inter_steps};
      }
  max_threads_ = t.max_threads;
  thread_threshold_ = t.thread_threshold;
}

const ChannelPlan& NcclModel::channels(NcclAlgo algo) const { return plans_[static_cast<std::size_t>(index_of(algo))]; }

void forget_nccl_searches() { nccl::forget_searches(); }

std::vector<std::vector<int>> nccl_channel_orders(const topo::Topology& topology, int nranks) {
  return nccl_schedule_channels(topology, nranks).ring;
}

NcclScheduleChannels nccl_schedule_channels(const topo::Topology& topology, int nranks) {
  NcclOptions options;
  options.nranks = nranks;
  try {
    const NcclModel model(topology, options);
    const ChannelPlan& tree = model.channels(NcclAlgo::tree);
    return {model.comm_orders(NcclAlgo::ring), model.comm_orders(NcclAlgo::tree), tree.simple_tree};
  } catch (const Error&) {
    return {};  // the machine is not one NCCL's model describes (see the header)
  }
}

}  // namespace colltune::sim
