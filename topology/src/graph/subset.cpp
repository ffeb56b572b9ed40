// find_host and without_hosts (subset.hpp): the machine rebuilt without some of its hosts.
#include "colltune/topology/subset.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"

namespace colltune::topo {

int find_host(const Topology& topology, std::string_view who) {
  for (int h = 0; h < topology.num_hosts(); ++h)
    if (topology.host_name(h) == who) return h;
  const std::optional<int> index = parse::try_integer<int>(who);
  return index && *index >= 0 && *index < topology.num_hosts() ? *index : -1;
}

std::vector<int> ranks_named(const Topology& topology, std::string_view who, int nranks, const std::string& what) {
  const bool digits = !who.empty() && std::all_of(who.begin(), who.end(), [](unsigned char c) { return std::isdigit(c); });
  if (digits) {
    const std::optional<int> rank = parse::try_integer<int>(who);
    if (!rank || *rank >= nranks) throw Error(what + ": rank " + std::string(who) + " is not in 0.." + std::to_string(nranks - 1));
    return {*rank};
  }
  std::vector<int> ranks;
  for (int h = 0; h < topology.num_hosts(); ++h) {
    if (topology.host_name(h) != who) continue;
    for (int r = 0; r < nranks; ++r)
      if (topology.host_of_rank(r) == h) ranks.push_back(r);
  }
  return ranks;
}

Topology without_hosts(const Topology& topology, const std::vector<int>& hosts) {
  std::vector<bool> removed(static_cast<std::size_t>(topology.num_hosts()), false);
  for (int h : hosts) {
    if (h < 0 || h >= topology.num_hosts())
      throw Error("without_hosts: host " + std::to_string(h) + " is not in 0.." +
                  std::to_string(topology.num_hosts() - 1));
    removed[static_cast<std::size_t>(h)] = true;
  }
  if (std::find(removed.begin(), removed.end(), false) == removed.end())
    throw Error("without_hosts: removing every host of " + topology.name + " leaves no machine");
  Topology out;
  out.name = topology.name;
  out.description = topology.description;
  out.gpu = topology.gpu;
  out.transport = topology.transport;
  // The calibration stays off: it was fitted to the whole machine.
  std::vector<int> host_map(removed.size(), -1);
  for (std::size_t h = 0; h < removed.size(); ++h)
    if (!removed[h]) host_map[h] = out.add_host(topology.host_name(static_cast<int>(h)));
  std::vector<VertexId> vertex_map(topology.num_devices(), kNoDevice);
  for (VertexId v = 0; v < topology.num_devices(); ++v) {
    Device d = topology.device(v);
    d.reduce_gbps = topology.reduce_gbps_of(v);
    if (d.host >= 0 && removed[static_cast<std::size_t>(d.host)]) continue;
    if (d.host >= 0) d.host = host_map[static_cast<std::size_t>(d.host)];
    vertex_map[v] = out.add_device(std::move(d));
  }
  for (std::size_t i = 0; i < topology.num_links(); ++i) {
    const VertexId a = vertex_map[topology.link_source(i)], b = vertex_map[topology.link_target(i)];
    if (a == kNoDevice || b == kNoDevice) continue;
    const Link& l = topology.link(i);
    out.add_link(a, b, l.kind, l.bandwidth_gbps, l.latency_us);
  }
  int next = 0;
  for (int r = 0; r < topology.num_ranks(); ++r) {
    const int h = topology.host_of_rank(r);  // -1: a rank outside every host stays
    if (h < 0 || !removed[static_cast<std::size_t>(h)]) out.map_rank(next++, vertex_map[topology.device_of_rank(r)]);
  }
  out.validate();
  return out;
}

}  // namespace colltune::topo
