// The analytical cost model: LevelCosts from a topology's routes, then the registry's closed-form
// cost hint. Derivation rules are stated in cost_model.hpp.
#include "colltune/sim/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/memo_key.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/pricer.hpp"
#include "colltune/sim/pipeline_closed_form.hpp"
#include "contention.hpp"
#include "steady_rounds.hpp"

namespace colltune::sim {
namespace {


constexpr int kSampledHosts = 16;

// us per byte for a bandwidth in GB/s (1 GB/s = 1e3 bytes per us); 0 for an infinite one.
double us_per_byte(double gbps) { return std::isfinite(gbps) && gbps > 0 ? 1.0 / (gbps * 1e3) : 0.0; }

// The worst alpha and beta seen over a set of routes.
struct WorstRoute {
  double alpha_us = 0;
  double beta_us_per_byte = 0;
  bool seen = false;
  void add(const topo::Path& path) {
    alpha_us = std::max(alpha_us, path.latency_us);
    beta_us_per_byte = std::max(beta_us_per_byte, us_per_byte(path.bottleneck_gbps));
    seen = true;
  }
};

// Up to kSampledHosts host indices spread evenly over [0, nhosts), ascending, deterministic.
std::vector<int> sampled_hosts(int nhosts) {
  std::vector<int> hosts;
  const int n = std::min(nhosts, kSampledHosts);
  for (int i = 0; i < n; ++i) hosts.push_back(static_cast<int>(static_cast<long long>(i) * nhosts / n));
  return hosts;
}

// Pairs inside one host: neighbours at the front, first-to-last, and a middle pair.
void sample_intra(const topo::Topology& topology, const std::vector<int>& ranks, WorstRoute& worst) {
  const std::size_t n = ranks.size();
  if (n < 2) return;
  worst.add(topology.route(ranks[0], ranks[1]));
  worst.add(topology.route(ranks[1], ranks[0]));
  worst.add(topology.route(ranks[0], ranks[n - 1]));
  worst.add(topology.route(ranks[n / 2], ranks[(n / 2 + 1) % n]));
}

// Pairs across hosts a and b: first ranks, last ranks, and first of a to last of b.
void sample_inter(const topo::Topology& topology, const std::vector<int>& a, const std::vector<int>& b,
                  WorstRoute& worst) {
  worst.add(topology.route(a.front(), b.front()));
  worst.add(topology.route(b.front(), a.front()));
  worst.add(topology.route(a.back(), b.back()));
  worst.add(topology.route(a.front(), b.back()));
}

// The algorithm and its options (everything a schedule is built from besides the count). A
// field added to coll::AlgoOptions that changes a schedule must join this key, or the memos
// would answer a request with another request's price.
std::string schedule_key(const coll::Algorithm& algorithm, const coll::AlgoOptions& o) {
  std::string key = algorithm.id;
  key += '\0';
  key += o.inner;
  key += '\0';
  append_raw(key, o.chunk_elems);
  for (bool v : {o.nccl_simple_tree, o.ps_colocated}) append_raw(key, v);
  append_raw(key, o.ps_servers);
  append_raw(key, o.channel_orders.size());
  for (const std::vector<int>& order : o.channel_orders) {
    append_raw(key, order.size());
    for (int r : order) append_raw(key, r);
  }
  return key;
}

// The level costs (every number the pricer reads of them). A field added to coll::LevelCosts
// that changes a price must join this key.
std::string levels_key(const coll::LevelCosts& c) {
  std::string key;
  for (double v : {c.alpha_intra_us, c.beta_intra_us_per_byte, c.alpha_inter_us, c.beta_inter_us_per_byte,
                   c.gamma_us_per_byte, c.beta_host_us_per_byte, c.switch_gamma_us_per_byte, c.switch_alpha_us,
                   c.beta_group_us_per_byte, c.alpha_near_us})
    append_raw(key, v);
  append_raw(key, c.host_group.size());
  for (int g : c.host_group) append_raw(key, g);
  append_raw(key, c.near_group.size());
  for (int g : c.near_group) append_raw(key, g);
  for (bool v : {c.separate_level_ports, c.switch_helpers}) append_raw(key, v);
  return key;
}

}  // namespace

WireRequest wire_request(const CollectiveRequest& request) {
  if (request.elem_size == 0) throw Error("collective request: elem_size must be positive");
  if (request.bytes % request.elem_size != 0)
    throw Error("collective request: bytes " + std::to_string(request.bytes) + " is not a multiple of the " +
                std::to_string(request.elem_size) + "-byte element size");
  WireRequest wire{request.bytes, request.elem_size, false};
  if (request.fp16_compress && request.elem_size == 4) wire = {request.bytes / 2, 2, true};
  return wire;
}

RankLayout layout_of_first_ranks(const topo::Topology& topology, int nranks) {
  if (nranks < 1) throw Error("ranks: " + std::to_string(nranks) + " must be at least 1");
  if (nranks > topology.num_ranks())
    throw Error("topology '" + topology.name + "' has " + std::to_string(topology.num_ranks()) +
                " ranks, fewer than the " + std::to_string(nranks) + " requested");
  // The prefix of the machine's own layout (host order, a rank outside every host alone), so the
  // cost model and the event simulator, which builds schedules over rank_layout(), see the same
  // hosts; only the hosts left empty by the cut are dropped.
  RankLayout all = topology.rank_layout();
  if (nranks == all.nranks()) return all;
  std::map<int, int> dense;  // host in `all` -> host in the prefix, in host order
  for (int r = 0; r < nranks; ++r) dense.emplace(all.host_of(r), 0);
  int next = 0;
  for (auto& [host, index] : dense) index = next++;
  std::vector<int> host_of_rank(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) host_of_rank[static_cast<std::size_t>(r)] = dense.at(all.host_of(r));
  return RankLayout(std::move(host_of_rank));
}

namespace {

// Rank 0's route to a host-mate and its route to another host leave through different first
// links, and its routes back arrive through different last links.
bool separate_level_ports(const topo::Topology& topology, const RankLayout& layout) {
  const int host = layout.host_of(0);
  const auto& home = layout.ranks_on_host(host);
  if (home.size() < 2 || layout.nhosts() < 2) return false;
  const int mate = home[0] == 0 ? home[1] : home[0];
  const int away = layout.ranks_on_host((host + 1) % layout.nhosts()).front();
  const topo::Path& intra_out = topology.route(0, mate);
  const topo::Path& inter_out = topology.route(0, away);
  const topo::Path& intra_in = topology.route(mate, 0);
  const topo::Path& inter_in = topology.route(away, 0);
  if (intra_out.links.empty() || inter_out.links.empty() || intra_in.links.empty() || inter_in.links.empty())
    return false;
  return intra_out.links.front() != inter_out.links.front() && intra_in.links.back() != inter_in.links.back();
}

// us per byte through the narrowest host's links to other hosts, all together (its NICs), in
// the weaker direction: 0 when there is one host or no host has such links.
double host_beta(const topo::Topology& topology, int nranks) {
  std::vector<double> out(static_cast<std::size_t>(topology.num_hosts()), 0.0);
  std::vector<double> in(out.size(), 0.0);
  for (std::size_t i = 0; i < topology.num_links(); ++i) {
    const int from = topology.device(topology.link_source(i)).host;
    const int to = topology.device(topology.link_target(i)).host;
    if (from == to) continue;
    if (from >= 0) out[static_cast<std::size_t>(from)] += topology.link(i).bandwidth_gbps;
    if (to >= 0) in[static_cast<std::size_t>(to)] += topology.link(i).bandwidth_gbps;
  }
  std::vector<bool> used(out.size(), false);
  int hosts = 0;
  for (int r = 0; r < nranks; ++r) {
    const int h = topology.host_of_rank(r);
    if (h >= 0 && !used[static_cast<std::size_t>(h)]) used[static_cast<std::size_t>(h)] = true, ++hosts;
  }
  if (hosts < 2) return 0;
  double narrowest = std::numeric_limits<double>::infinity();
  for (std::size_t h = 0; h < out.size(); ++h)
    if (used[h] && out[h] > 0 && in[h] > 0) narrowest = std::min({narrowest, out[h], in[h]});
  return us_per_byte(narrowest);
}

// How many of the first nranks ranks, counted from the last, are switches that reduce in the
// network (topo::with_nvls_switch, with_sharp_switch): the in-switch algorithms' helpers.
int trailing_switch_ranks(const topo::Topology& topology, int nranks) {
  int n = 0;
  while (n < nranks && topo::reduces_in_switch(topology.device(topology.device_of_rank(nranks - 1 - n)))) ++n;
  return n;
}

// The latency between hosts behind the same switches (LevelCosts::near_group), where it is
// shorter than the worst inter-host latency: the worst of the sampled hosts' routes to the next
// host of their group.
void set_near_latency(const topo::Topology& topology, const RankLayout& layout, const std::vector<int>& sampled,
                      coll::LevelCosts& levels) {
  std::vector<int> group = detail::near_groups(topology, layout);  // contention.hpp
  if (group.empty()) return;
  std::vector<std::vector<int>> members;
  for (std::size_t h = 0; h < group.size(); ++h) {
    const auto g = static_cast<std::size_t>(group[h]);
    if (members.size() <= g) members.resize(g + 1);
    members[g].push_back(static_cast<int>(h));
  }
  WorstRoute near;
  for (int h : sampled) {
    const std::vector<int>& mates = members[static_cast<std::size_t>(group[static_cast<std::size_t>(h)])];
    if (mates.size() < 2) continue;
    const auto at = static_cast<std::size_t>(std::find(mates.begin(), mates.end(), h) - mates.begin());
    const int mate = mates[(at + 1) % mates.size()];
    sample_inter(topology, layout.ranks_on_host(h), layout.ranks_on_host(mate), near);
  }
  if (!near.seen || !(near.alpha_us < levels.alpha_inter_us)) return;
  levels.near_group = std::move(group);
  levels.alpha_near_us = near.alpha_us;
}

// The level costs of `layout`'s ranks (the first layout.nranks() of the topology).
coll::LevelCosts level_costs(const topo::Topology& topology, const RankLayout& layout) {
  WorstRoute intra;
  WorstRoute inter;
  const std::vector<int> hosts = sampled_hosts(layout.nhosts());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const auto& ranks = layout.ranks_on_host(hosts[i]);
    sample_intra(topology, ranks, intra);
    if (layout.nhosts() > 1) {
      const int next = (hosts[i] + 1) % layout.nhosts();
      sample_inter(topology, ranks, layout.ranks_on_host(next), inter);
    }
  }
  if (layout.nhosts() > 2) sample_inter(topology, layout.ranks_on_host(0), layout.ranks_on_host(layout.nhosts() - 1), inter);
  if (!intra.seen) intra = inter;
  if (!inter.seen) inter = intra;
  coll::LevelCosts levels;
  levels.alpha_intra_us = intra.alpha_us;
  levels.beta_intra_us_per_byte = intra.beta_us_per_byte;
  levels.alpha_inter_us = inter.alpha_us;
  levels.beta_inter_us_per_byte = inter.beta_us_per_byte;
  const int switches = trailing_switch_ranks(topology, layout.nranks());
  const int last = layout.nranks() - 1;
  const int data = layout.nranks() - switches;
  levels.switch_helpers = switches > 0 && data > 0;
  const topo::Device& last_device = topology.device(topology.device_of_rank(last));
  // The switch's rate is its own; the GPUs' gamma is theirs (the switch's 0 would not count).
  levels.switch_gamma_us_per_byte = levels.switch_helpers ? us_per_byte(last_device.reduce_gbps) : 0.0;
  if (levels.switch_helpers) {  // the worst GPU-switch latency, both ways, over the GPUs it serves
    const bool nvswitch = last_device.kind == topo::DeviceKind::nvswitch;
    for (int r = 0; r < data; ++r) {
      if (nvswitch && layout.host_of(r) != layout.host_of(last)) continue;  // a host's NVSwitch serves its GPUs
      levels.switch_alpha_us = std::max(
          {levels.switch_alpha_us, topology.route(r, last).latency_us, topology.route(last, r).latency_us});
    }
  }
  levels.gamma_us_per_byte = reduce_us_per_byte(topology, levels.switch_helpers ? data : layout.nranks());
  levels.separate_level_ports = separate_level_ports(topology, layout);
  levels.beta_host_us_per_byte = host_beta(topology, layout.nranks());
  detail::NetworkGroups groups = detail::network_groups(topology, layout);  // contention.hpp
  levels.host_group = std::move(groups.host_group);
  levels.beta_group_us_per_byte = groups.beta_us_per_byte;
  set_near_latency(topology, layout, hosts, levels);
  return levels;
}

}  // namespace

coll::LevelCosts derive_level_costs(const topo::Topology& topology, int nranks) {
  return level_costs(topology, layout_of_first_ranks(topology, nranks));
}

double reduce_us_per_byte(const topo::Topology& topology, int nranks) {
  double slowest = std::numeric_limits<double>::infinity();
  for (int r = 0; r < nranks; ++r) {
    const double gbps = topology.reduce_gbps_of(topology.device_of_rank(r));
    if (gbps > 0) slowest = std::min(slowest, gbps);
  }
  return us_per_byte(slowest);
}

double hint_or_price(const coll::Algorithm& algorithm, const RankLayout& layout, std::size_t bytes,
                     std::size_t elem_size, const coll::AlgoOptions& options, const coll::LevelCosts& levels,
                     PipelineProbes probes, SizeFamilies families) {
  if (algorithm.cost) {
    coll::LevelCosts with_pricer = levels;
    with_pricer.price = [probes, families](const coll::Algorithm& part, const RankLayout& part_layout,
                                           std::size_t part_bytes, std::size_t part_elem,
                                           const coll::AlgoOptions& part_options, const coll::LevelCosts& part_costs) {
      return hint_or_price(part, part_layout, part_bytes, part_elem, part_options, part_costs, probes, families);
    };
    if (const std::optional<double> t = algorithm.cost(layout, bytes, elem_size, options, with_pricer)) return *t;
  }
  const std::size_t count = elem_size == 0 ? bytes : bytes / elem_size;
  return price_pipeline(algorithm, layout, count, elem_size, options, levels, nullptr, probes, families);
}

double price_pipeline(const coll::Algorithm& algorithm, const RankLayout& layout, std::size_t count,
                      std::size_t elem_size, const coll::AlgoOptions& options, const coll::LevelCosts& levels,
                      bool* extrapolated, PipelineProbes probes, SizeFamilies families) {
  if (extrapolated) *extrapolated = false;
  // The schedules (algorithm, options, layout; not the machine's costs) and their price's key.
  std::string schedules = schedule_key(algorithm, options);
  for (int h : layout.host_of_rank()) append_raw(schedules, h);
  std::string base = schedules + levels_key(levels);
  append_raw(base, elem_size);
  // A schedule's price: the reference pricer's, from the closed form of its family of sizes
  // where one holds (pipeline_closed_form.hpp), else priced whole; kept either way.
  auto priced_once = [&](std::size_t n) {
    return price_by_family(base, schedules, algorithm, layout, n, elem_size, options, levels,
                           families == SizeFamilies::use);
  };
  const std::size_t pieces = algorithm.pipeline_pieces ? algorithm.pipeline_pieces(layout, options) : 0;
  const std::size_t unit = pieces * options.chunk_elems;  // elements of one pipeline round
  if (unit == 0) return priced_once(count);
  // A long pipeline: its fill and drain, then one steady round per round (steady_rounds.hpp),
  // proven over at least twice the depth of its reduction (lg p where the algorithm does not
  // say; asked only where a probe may pay, as nccl_tree's depth takes its trees).
  const auto window = [&] {
    int depth = 0;
    if (algorithm.summation_depth) {
      depth = algorithm.summation_depth(layout, options);
    } else {
      while ((1 << depth) < layout.nranks()) ++depth;
    }
    return 2 * static_cast<std::size_t>(depth);
  };
  const std::size_t last_chunks = count % unit;
  const auto rounds_price = [&](std::size_t rounds, bool with_last) {
    return priced_once(rounds * unit + (with_last ? last_chunks : 0));
  };
  // The settled pipelines are kept by their search's first probe as well: each sequence has its
  // own first settled probe.
  const bool from_window = probes == PipelineProbes::from_window;
  std::string pipeline_key = base;
  append_raw(pipeline_key, from_window);
  const detail::FirstProbe first = from_window ? detail::FirstProbe::window : detail::FirstProbe::four_rounds;
  if (const std::optional<double> t =
          detail::price_from_steady_rounds(pipeline_key, count / unit, window, rounds_price, first)) {
    if (extrapolated) *extrapolated = true;
    return *t;
  }
  return priced_once(count);
}

void forget_prices() {
  forget_family_prices();
  detail::forget_settled_pipelines();
}

CostModel::CostModel(const topo::Topology& topology) : CostModel(topology, topology.num_ranks()) {}

CostModel::CostModel(const topo::Topology& topology, int nranks)
    : CostModel(topology, nranks, nccl_schedule_channels(topology, nranks)) {}

CostModel::CostModel(const topo::Topology& topology, int nranks, NcclScheduleChannels nccl)
    : layout(layout_of_first_ranks(topology, nranks)) {
  levels = level_costs(topology, layout);
  cast_us_per_byte = levels.gamma_us_per_byte;  // casts run at the reduction rate too
  nccl_ring_orders = std::move(nccl.ring);
  nccl_tree_orders = std::move(nccl.tree);
  nccl_simple_tree = nccl.simple_tree;
}

coll::AlgoOptions CostModel::options_for(const coll::Algorithm& algorithm, const coll::AlgoOptions& options) const {
  coll::AlgoOptions out = options;
  if (algorithm.nccl_ring_channels && out.channel_orders.empty()) out.channel_orders = nccl_ring_orders;
  if (algorithm.nccl_tree_channels && out.channel_orders.empty() && !nccl_tree_orders.empty()) {
    out.channel_orders = nccl_tree_orders;
    out.nccl_simple_tree = nccl_simple_tree;
  }
  return out;
}

double CostModel::cast_us(std::size_t fp32_bytes) const {
  return 2.0 * static_cast<double>(fp32_bytes) * cast_us_per_byte;
}

double CostModel::time_us(const CollectiveRequest& request) const {
  return time_us(coll::find_algorithm(request.algorithm), request);
}

double CostModel::time_us(const coll::Algorithm& algorithm, const CollectiveRequest& request) const {
  const WireRequest wire = wire_request(request);
  const coll::AlgoOptions options = options_for(algorithm, request.options);
  if (algorithm.not_applicable && algorithm.not_applicable(layout, wire.bytes / wire.elem_size, options))
    return std::numeric_limits<double>::infinity();
  double t = hint_or_price(algorithm, layout, wire.bytes, wire.elem_size, options, levels,
                           PipelineProbes::from_four_rounds, families);
  if (wire.compressed) t += cast_us(request.bytes);
  return t;
}

}  // namespace colltune::sim
