// The network's groups of hosts behind one trunk (network_groups, contention.hpp): the link
// class the analytic model shares among the messages that leave or enter a group.
#include "contention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace colltune::sim::detail {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// Per topology host: its layout host (the first whose first rank is there), or kNone. A table,
// not a map: the callers look it up once per link (42,000 on a 512-host machine).
std::vector<std::size_t> layout_hosts(const topo::Topology& topology, const RankLayout& layout) {
  std::vector<std::size_t> out(static_cast<std::size_t>(topology.num_hosts()), kNone);
  for (int h = 0; h < layout.nhosts(); ++h) {
    const int host = topology.host_of_rank(layout.ranks_on_host(h).front());
    if (host >= 0 && out[static_cast<std::size_t>(host)] == kNone)
      out[static_cast<std::size_t>(host)] = static_cast<std::size_t>(h);
  }
  return out;
}

// Per layout host: the one device outside every host its links reach (its leaf switch), or kNone
// when it has none or several (a rail-optimised host: no groups).
std::vector<std::size_t> first_switches(const topo::Topology& topology, const RankLayout& layout) {
  const std::vector<std::size_t> layout_host = layout_hosts(topology, layout);
  std::vector<std::size_t> out(static_cast<std::size_t>(layout.nhosts()), kNone);
  std::vector<bool> several(out.size(), false);
  for (std::size_t l = 0; l < topology.num_links(); ++l) {
    const topo::Device& a = topology.device(topology.link_source(l));
    const topo::Device& b = topology.device(topology.link_target(l));
    const bool out_of_host = a.host >= 0 && b.host < 0;
    const bool into_host = b.host >= 0 && a.host < 0;
    if (!out_of_host && !into_host) continue;
    const std::size_t h = layout_host[static_cast<std::size_t>(out_of_host ? a.host : b.host)];
    if (h == kNone) continue;
    const std::size_t sw = out_of_host ? topology.link_target(l) : topology.link_source(l);
    std::size_t& first = out[h];
    if (first != kNone && first != sw) several[h] = true;
    first = sw;
  }
  for (std::size_t h = 0; h < out.size(); ++h)
    if (several[h]) out[h] = kNone;
  return out;
}

// Per layout host: the devices outside every host that its links out of the host reach, sorted
// and without repeats (empty for a host with none).
std::vector<std::vector<std::size_t>> reached_switches(const topo::Topology& topology, const RankLayout& layout) {
  const std::vector<std::size_t> layout_host = layout_hosts(topology, layout);
  std::vector<std::vector<std::size_t>> out(static_cast<std::size_t>(layout.nhosts()));
  for (std::size_t l = 0; l < topology.num_links(); ++l) {
    const topo::Device& a = topology.device(topology.link_source(l));
    if (a.host < 0 || topology.device(topology.link_target(l)).host >= 0) continue;
    if (const std::size_t h = layout_host[static_cast<std::size_t>(a.host)]; h != kNone)
      out[h].push_back(topology.link_target(l));
  }
  for (auto& switches : out) {
    std::sort(switches.begin(), switches.end());
    switches.erase(std::unique(switches.begin(), switches.end()), switches.end());
  }
  return out;
}

// A group's capacities, GB/s: its trunk to and from the rest of the network, and its hosts' links
// to and from its switch.
struct Capacity {
  double trunk_out = 0, trunk_in = 0, hosts_out = 0, hosts_in = 0;
};

// The capacities of the given switches, in one pass over the links.
std::vector<Capacity> capacities(const topo::Topology& topology, const std::vector<std::size_t>& switches) {
  std::vector<Capacity> out(switches.size());
  std::vector<std::size_t> slot(topology.num_devices(), kNone);  // device -> its place in switches
  for (std::size_t i = 0; i < switches.size(); ++i) slot[switches[i]] = i;
  for (std::size_t l = 0; l < topology.num_links(); ++l) {
    const std::size_t from = topology.link_source(l);
    const std::size_t to = topology.link_target(l);
    if (slot[from] == kNone && slot[to] == kNone) continue;
    const double gbps = topology.link(l).bandwidth_gbps;
    if (slot[from] != kNone) {  // leaving the switch: to a host, or up its trunk
      Capacity& c = out[slot[from]];
      (topology.device(to).host >= 0 ? c.hosts_in : c.trunk_out) += gbps;
    }
    if (slot[to] != kNone) {
      Capacity& c = out[slot[to]];
      (topology.device(from).host >= 0 ? c.hosts_out : c.trunk_in) += gbps;
    }
  }
  return out;
}

}  // namespace

NetworkGroups network_groups(const topo::Topology& topology, const RankLayout& layout) {
  if (layout.nhosts() < 2) return {};
  const std::vector<std::size_t> sw = first_switches(topology, layout);
  if (std::find(sw.begin(), sw.end(), kNone) != sw.end()) return {};
  NetworkGroups g;
  std::vector<std::size_t> switches;  // group -> its switch, in order of first host
  for (std::size_t s : sw) {
    auto it = std::find(switches.begin(), switches.end(), s);
    if (it == switches.end()) it = switches.insert(switches.end(), s);
    g.host_group.push_back(static_cast<int>(it - switches.begin()));
  }
  if (switches.size() < 2) return {};
  double narrowest = std::numeric_limits<double>::infinity();
  bool oversubscribed = false;
  for (const Capacity& c : capacities(topology, switches)) {
    if (!(c.trunk_out > 0) || !(c.trunk_in > 0)) return {};  // no way out but through hosts: not a tree
    narrowest = std::min({narrowest, c.trunk_out, c.trunk_in});
    oversubscribed = oversubscribed || c.trunk_out < c.hosts_out || c.trunk_in < c.hosts_in;
  }
  if (!oversubscribed || !std::isfinite(narrowest)) return {};  // a trunk never narrower than its hosts
  g.beta_us_per_byte = 1.0 / (narrowest * 1e3);
  return g;
}

std::vector<int> near_groups(const topo::Topology& topology, const RankLayout& layout) {
  if (layout.nhosts() < 3) return {};
  const std::vector<std::vector<std::size_t>> reached = reached_switches(topology, layout);
  std::map<std::vector<std::size_t>, int> group_of;  // switches reached -> group
  std::vector<int> group;
  std::vector<int> hosts_in;  // per group
  for (const auto& switches : reached) {
    int g = static_cast<int>(hosts_in.size());
    if (!switches.empty()) g = group_of.emplace(switches, g).first->second;
    if (g == static_cast<int>(hosts_in.size())) hosts_in.push_back(0);
    ++hosts_in[static_cast<std::size_t>(g)];
    group.push_back(g);
  }
  const bool shared = std::any_of(hosts_in.begin(), hosts_in.end(), [](int n) { return n > 1; });
  if (hosts_in.size() < 2 || !shared) return {};
  return group;
}

}  // namespace colltune::sim::detail
