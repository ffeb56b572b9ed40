// "FILE:nodes=N,...": a cluster of N copies of the one server a topology file describes (an
// NCCL dump describes the node it ran on), joined by the leaf/spine network the presets use.
//
// What is copied: every device of the file's host and every link between two of them, ranks
// numbered host by host in the file's order. What is not: the file's own stand-in for the
// network (devices outside the host, such as the NCCL import's "fabric"). The NICs that join
// the new network are the host's NICs with a link outside it at the fastest rate among them:
// the compute NICs. Slower ones (a storage NIC, as on a DGX) stay off the training fabric.
// Their rate is the network's per-NIC rate unless nic_gbit= says otherwise.
#include <algorithm>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "presets/preset_hosts.hpp"
#include "presets/preset_params.hpp"
#include "presets/replicate.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo::detail {
namespace {

struct ComputeNics {
  std::vector<VertexId> nics;
  double gbps = 0;  // their link rate to the network, per direction
};

// The host's NICs with the fastest link to a device outside the host.
ComputeNics compute_nics(const Topology& server) {
  ComputeNics out;
  for (std::size_t i = 0; i < server.num_links(); ++i) {
    const VertexId from = server.link_source(i);
    const VertexId to = server.link_target(i);
    if (server.device(from).kind != DeviceKind::nic || server.device(from).host < 0 || server.device(to).host >= 0)
      continue;
    const double gbps = server.link(i).bandwidth_gbps;
    if (gbps > out.gbps) out = ComputeNics{{}, gbps};
    if (gbps == out.gbps && std::find(out.nics.begin(), out.nics.end(), from) == out.nics.end())
      out.nics.push_back(from);
  }
  return out;
}

// "host0/gpu3" -> "gpu3": the part after the host's name, so copies read "node5/gpu3".
std::string local_id(const std::string& id, const std::string& host) {
  return id.rfind(host + "/", 0) == 0 ? id.substr(host.size() + 1) : id;
}

PresetInfo replica_params(const std::string& file, double nic_gbps) {
  return PresetInfo{file,
                    "copies of the server " + file + " describes",
                    {{"nodes", "1", "number of servers"},
                     {"nic_gbit", fmt_num(nic_gbps * 8), "per-NIC network rate, Gbit/s (default: the file's)"},
                     {"leaf_ports", "32", "NIC ports per leaf switch"},
                     {"oversub", "1", "leaf uplink oversubscription"},
                     {"sharp", "0", "1: the switches reduce in the network (SHARP)"}}};
}

// Copy `n` of the server: its devices and internal links, its ranks from n * ranks onwards.
HostDevices add_copy(Topology& t, const Topology& server, int n, const std::vector<VertexId>& nics) {
  HostDevices out;
  const std::string name = "node" + std::to_string(n);
  out.host = t.add_host(name);
  std::vector<VertexId> copy(server.num_devices(), kNoDevice);
  for (VertexId v = 0; v < server.num_devices(); ++v) {
    Device d = server.device(v);
    d.reduce_gbps = server.reduce_gbps_of(v);
    if (d.host < 0) continue;
    d.id = name + "/" + local_id(d.id, server.host_name(d.host));
    d.host = out.host;
    copy[v] = t.add_device(std::move(d));
  }
  for (std::size_t i = 0; i < server.num_links(); ++i) {
    const VertexId a = copy[server.link_source(i)], b = copy[server.link_target(i)];
    if (a == kNoDevice || b == kNoDevice) continue;
    const Link& l = server.link(i);
    t.add_link(a, b, l.kind, l.bandwidth_gbps, l.latency_us);
  }
  for (int r = 0; r < server.num_ranks(); ++r) {
    out.gpus.push_back(copy[server.device_of_rank(r)]);
    t.map_rank(n * server.num_ranks() + r, out.gpus.back());
  }
  for (VertexId nic : nics) out.nics.push_back(copy[nic]);
  return out;
}

}  // namespace

Topology replicate_server(const Topology& server, const std::string& file, std::string_view params) {
  if (server.num_hosts() != 1)
    throw Error(file + ": nodes= builds a cluster from a file of one server; this file has " +
                std::to_string(server.num_hosts()) + " hosts");
  const ComputeNics nics = compute_nics(server);
  const PresetInfo info = replica_params(file, nics.gbps);
  const PresetParams p(info, params);
  const int nodes = p.integer("nodes", 1, 1 << 16);
  const long long ranks = static_cast<long long>(nodes) * server.num_ranks();
  if (ranks > limits::kMaxTopologyRanks)
    limits::exceeded(file + ": nodes=" + std::to_string(nodes) + " x " + std::to_string(server.num_ranks()) +
                         " ranks = " + std::to_string(ranks) + " ranks",
                     std::to_string(limits::kMaxTopologyRanks) + " ranks", limits::kTopologySizeReason);
  if (nodes > 1 && nics.nics.empty())
    throw Error(file + ": nodes=" + std::to_string(nodes) + " needs NICs that leave the server; the file has none");
  const NetworkPlan net{nics.nics.empty() ? 0.0 : p.number("nic_gbit", 0) / 8.0, p.integer("leaf_ports", 1, 1 << 16),
                        p.number("oversub", 0), p.integer("sharp", 0, 1) == 1};
  Topology t;
  std::vector<HostDevices> hosts;
  for (int n = 0; n < nodes; ++n) hosts.push_back(add_copy(t, server, n, nics.nics));
  if (nodes > 1) add_leaf_spine(t, hosts, net);
  t.description = std::to_string(nodes) + " x (" + (server.description.empty() ? file : server.description) + ")";
  return t;
}

}  // namespace colltune::topo::detail
