#pragma once
// Helpers shared by the topology tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::topo::test {

inline std::string data_path(const std::string& name) { return std::string(COLLTUNE_TEST_DATA) + "/topology/" + name; }

// Runs `fn`, expects colltune::Error, and returns its message for further checks.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const colltune::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected colltune::Error";
  return "";
}

// Same hosts, devices in order, links in index order with the same figures, same ranks.
inline void expect_same_graph(const Topology& a, const Topology& b) {
  ASSERT_EQ(a.num_hosts(), b.num_hosts());
  for (int h = 0; h < a.num_hosts(); ++h) EXPECT_EQ(a.host_name(h), b.host_name(h));
  ASSERT_EQ(a.num_devices(), b.num_devices());
  for (VertexId v = 0; v < a.num_devices(); ++v) {
    EXPECT_EQ(a.device(v).id, b.device(v).id);
    EXPECT_EQ(a.device(v).kind, b.device(v).kind);
    EXPECT_EQ(a.device(v).host, b.device(v).host);
    EXPECT_EQ(a.device(v).reduce_gbps, b.device(v).reduce_gbps);
    EXPECT_EQ(a.device(v).compute_capability, b.device(v).compute_capability);
    EXPECT_EQ(a.device(v).switch_reduction, b.device(v).switch_reduction);
  }
  ASSERT_EQ(a.num_links(), b.num_links());
  for (std::size_t i = 0; i < a.num_links(); ++i) {
    EXPECT_EQ(a.link_source(i), b.link_source(i)) << "link " << i;
    EXPECT_EQ(a.link_target(i), b.link_target(i)) << "link " << i;
    EXPECT_EQ(a.link(i).kind, b.link(i).kind) << "link " << i;
    EXPECT_EQ(a.link(i).bandwidth_gbps, b.link(i).bandwidth_gbps) << "link " << i;
    EXPECT_EQ(a.link(i).latency_us, b.link(i).latency_us) << "link " << i;
    EXPECT_EQ(a.link(i).index, i);
    EXPECT_EQ(b.link(i).index, i);
  }
  ASSERT_EQ(a.num_ranks(), b.num_ranks());
  for (int r = 0; r < a.num_ranks(); ++r) EXPECT_EQ(a.device_of_rank(r), b.device_of_rank(r));
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
}

// The device ids along a path, starting with the source device.
inline std::vector<std::string> path_devices(const Topology& t, const Path& p, VertexId from) {
  std::vector<std::string> out{t.device(from).id};
  for (std::size_t l : p.links) out.push_back(t.device(t.link_target(l)).id);
  return out;
}

}  // namespace colltune::topo::test
