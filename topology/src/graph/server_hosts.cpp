// with_server_hosts(): dedicated parameter servers as hosts of their own on the machine's
// network (topology.hpp). A server host is what ps-lite and TensorFlow's ps tasks run on: a
// CPU machine with one NIC at the cluster's NIC rate.
#include <optional>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::topo {
namespace {

// Where a host meets the network: a link of kind net from a device of the host to a device
// outside every host (a switch), the first by link index.
struct Attachment {
  std::size_t link = 0;  // host device -> switch
  VertexId host_side = 0;
  VertexId switch_side = 0;
};

std::optional<Attachment> attachment_of(const Topology& t, int host) {
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const VertexId from = t.link_source(i);
    const VertexId to = t.link_target(i);
    if (t.link(i).kind != LinkKind::net || t.device(from).host != host || t.device(to).host != -1) continue;
    return Attachment{i, from, to};
  }
  return std::nullopt;
}

// The latency of the host side's link into its host (a NIC's PCIe link), 0 where it has none.
double inner_latency_us(const Topology& t, VertexId nic) {
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    if (t.link_target(i) == nic && t.device(t.link_source(i)).host == t.device(nic).host) return t.link(i).latency_us;
  }
  return 0;
}

}  // namespace

Topology with_server_hosts(const Topology& topology, int servers, double reduce_gbps) {
  if (servers < 1) throw Error("parameter servers: need at least 1 server host (got " + std::to_string(servers) + ")");
  Topology t = topology;
  const int hosts = topology.num_hosts();
  for (int s = 0; s < servers; ++s) {
    const int like = hosts > 0 ? s % hosts : -1;
    const std::optional<Attachment> at = like >= 0 ? attachment_of(topology, like) : std::nullopt;
    if (!at) {
      throw Error("parameter servers: topology '" + topology.name +
                  "' has no link from a host to a network switch to "
                  "attach dedicated server hosts to (use colocated servers)");
    }
    const Link& net = topology.link(at->link);
    const std::string name = "ps-server" + std::to_string(s);
    const int host = t.add_host(name);
    const VertexId cpu = t.add_device(Device{name + "/cpu", DeviceKind::cpu, host, reduce_gbps, 0});
    const VertexId nic = t.add_device(Device{name + "/nic0", DeviceKind::nic, host, 0, 0});
    // The CPU-NIC link at the NIC's rate: the NIC, not the host's inside, is the server's limit.
    t.add_duplex_link(cpu, nic, LinkKind::pcie, net.bandwidth_gbps, inner_latency_us(topology, at->host_side));
    t.add_duplex_link(nic, at->switch_side, LinkKind::net, net.bandwidth_gbps, net.latency_us);
    t.map_rank(t.num_ranks(), cpu);
  }
  t.name = topology.name + " + " + std::to_string(servers) + " server host" + (servers == 1 ? "" : "s");
  t.validate();
  return t;
}

}  // namespace colltune::topo
