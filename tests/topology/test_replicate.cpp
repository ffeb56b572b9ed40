// "FILE:nodes=N,...": clusters of copies of the one server a topology file describes.
#include <gtest/gtest.h>

#include <string>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"

namespace {

using namespace colltune;
using namespace colltune::topo;

const std::string kDump = std::string(COLLTUNE_TEST_DATA) + "/topology/dgx-h100-nccl-topo.xml";
const std::string kTwoHosts = std::string(COLLTUNE_EXAMPLES) + "/topologies/hypothetical-2node-800g.json";

int count_kind(const Topology& t, DeviceKind kind) {
  int n = 0;
  for (VertexId v = 0; v < t.num_devices(); ++v) n += t.device(v).kind == kind;
  return n;
}

// Links from a host's NICs to devices outside every host: the NICs on the network.
int network_nic_links(const Topology& t, double* gbps) {
  int n = 0;
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    if (t.device(t.link_source(i)).kind != DeviceKind::nic || t.device(t.link_target(i)).host >= 0) continue;
    ++n;
    *gbps = t.link(i).bandwidth_gbps;
  }
  return n;
}

TEST(Replicate, CopiesTheServerAndJoinsItsComputeNics) {
  const Topology server = load_topology(kDump);
  const Topology t = load_topology(kDump + ":nodes=4");
  EXPECT_EQ(t.num_hosts(), 4);
  EXPECT_EQ(t.num_ranks(), 4 * server.num_ranks());
  EXPECT_EQ(t.rank_layout().max_ranks_per_host(), server.num_ranks());
  EXPECT_EQ(count_kind(t, DeviceKind::gpu), 4 * count_kind(server, DeviceKind::gpu));
  EXPECT_EQ(count_kind(t, DeviceKind::nic), 4 * count_kind(server, DeviceKind::nic));
  // The eight 400 Gb/s ConnectX-7 of each copy join the network at the file's rate; the
  // dual-port storage NIC (slower) does not.
  double gbps = 0;
  EXPECT_EQ(network_nic_links(t, &gbps), 4 * 8);
  EXPECT_DOUBLE_EQ(gbps, 50.0);
  EXPECT_EQ(t.device(t.device_of_rank(9)).id, "node1/" + server.device(server.device_of_rank(1)).id.substr(
                                                             server.device(server.device_of_rank(1)).id.find('/') + 1));
  // Ranks on different copies meet through a NIC: the route's narrowest link is the network's.
  EXPECT_DOUBLE_EQ(t.route(0, 8).bottleneck_gbps, 50.0);
  // Inside a copy, the file's own links.
  EXPECT_DOUBLE_EQ(t.route(0, 1).bottleneck_gbps, server.route(0, 1).bottleneck_gbps);
}

TEST(Replicate, NetworkParametersAsThePresetsHaveThem) {
  double gbps = 0;
  network_nic_links(load_topology(kDump + ":nodes=2,nic_gbit=800"), &gbps);
  EXPECT_DOUBLE_EQ(gbps, 100.0);
  const Topology sharp = load_topology(kDump + ":nodes=2,sharp=1");
  bool reduces = false;
  for (VertexId v = 0; v < sharp.num_devices(); ++v)
    reduces |= sharp.device(v).switch_reduction == SwitchReduction::sharp;
  EXPECT_TRUE(reduces);
}

void expect_error(const std::string& spec, const std::string& part) {
  try {
    load_topology(spec);
    ADD_FAILURE() << spec << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Replicate, BadInputNamesTheProblem) {
  expect_error(kDump + ":nodes=0", "nodes: '0' must be an integer in 1..65536");
  expect_error(kDump + ":gpus=4", "unknown parameter 'gpus' (valid: nodes, nic_gbit, leaf_ports, oversub, sharp)");
  expect_error(kDump + ":nodes=100000", "nodes: '100000' must be an integer in 1..65536");
  expect_error(kTwoHosts + ":nodes=2", "this file has 2 hosts");
}

}  // namespace
