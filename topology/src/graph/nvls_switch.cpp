// with_nvls_switch() and with_sharp_switch(): switches that reduce in the network as ranks of
// their own (topology.hpp), for the in-switch algorithms (nccl_nvls, nccl_nvls_tree: every host's
// NVSwitch; nccl_collnet: the network's SHARP switch), whose last participants are those switches.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::topo {
namespace {

// The hosts that hold ranks, in the order their first ranks come.
std::vector<int> rank_hosts(const Topology& topology) {
  std::vector<int> hosts;
  std::set<int> seen;
  for (int r = 0; r < topology.num_ranks(); ++r)
    if (seen.insert(topology.host_of_rank(r)).second) hosts.push_back(topology.host_of_rank(r));
  return hosts;
}

bool is_sharp(const Device& d) {
  return d.kind == DeviceKind::net_switch && d.switch_reduction == SwitchReduction::sharp;
}

// Links from v to other SHARP switches: the spine has one to every leaf, a leaf one.
int sharp_neighbours(const Topology& topology, VertexId v) {
  int n = 0;
  for (std::size_t l : topology.out_links(v))
    if (is_sharp(topology.device(topology.link_target(l)))) ++n;
  return n;
}

}  // namespace

bool reduces_in_switch(const Device& d) {
  return (d.kind == DeviceKind::nvswitch && d.switch_reduction == SwitchReduction::nvls) || is_sharp(d);
}

std::optional<VertexId> nvls_switch_of(const Topology& topology, int host) {
  for (VertexId v = 0; v < topology.num_devices(); ++v) {
    const Device& d = topology.device(v);
    if (d.host == host && d.kind == DeviceKind::nvswitch && reduces_in_switch(d)) return v;
  }
  return std::nullopt;
}

Topology with_nvls_switch(const Topology& topology) {
  if (topology.num_ranks() < 1) throw Error("topology '" + topology.name + "' has no ranks");
  Topology t = topology;
  const std::vector<int> hosts = rank_hosts(topology);
  // Every host's first NVLS switch (nvls_switch_of's answer), in one pass over the devices:
  // asking per host read all 36,000 devices of a 512-host machine 512 times.
  std::map<int, VertexId> switch_of_host;
  for (VertexId v = 0; v < topology.num_devices(); ++v) {
    const Device& d = topology.device(v);
    if (d.kind == DeviceKind::nvswitch && reduces_in_switch(d)) switch_of_host.emplace(d.host, v);
  }
  for (int host : hosts) {
    const auto found = switch_of_host.find(host);
    const std::optional<VertexId> nvswitch =
        found == switch_of_host.end() ? std::nullopt : std::optional<VertexId>(found->second);
    if (!nvswitch)  // the host named where there are several
      throw Error("topology '" + topology.name + "': no NVSwitch that reduces in the switch (switch_reduction nvls)" +
                  (host >= 0 && hosts.size() > 1 ? " on host " + topology.host_name(host) : std::string()));
    t.map_rank(t.num_ranks(), *nvswitch);
  }
  t.name = topology.name + " + nvswitch rank" + (t.num_ranks() - topology.num_ranks() > 1 ? "s" : "");
  t.validate();
  return t;
}

Topology with_sharp_switch(const Topology& topology) {
  if (topology.num_ranks() < 1) throw Error("topology '" + topology.name + "' has no ranks");
  std::optional<VertexId> root;
  int best = -1;
  for (VertexId v = 0; v < topology.num_devices(); ++v) {
    if (!is_sharp(topology.device(v))) continue;
    const int links = sharp_neighbours(topology, v);
    if (links > best) root = v, best = links;
  }
  if (!root)
    throw Error("topology '" + topology.name +
                "': no network switch that reduces in the switch (switch_reduction sharp; a preset's sharp=1)");
  Topology t = topology;
  t.map_rank(t.num_ranks(), *root);
  t.name = topology.name + " + sharp switch rank";
  t.validate();
  return t;
}

}  // namespace colltune::topo
