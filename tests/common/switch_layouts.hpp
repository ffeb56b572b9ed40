#pragma once
// Rank layouts of the in-switch allreduces, with their switches as helper ranks after the GPUs
// (as topo::with_nvls_switch and topo::with_sharp_switch number them): shared by the schedule
// tests (tests/collectives/schedules) and the executor tests (tests/collectives/runtime).
#include <vector>

#include "colltune/common/rank_layout.hpp"

namespace colltune::test {

// H hosts of L GPUs (ranks h*L .. h*L+L-1), then host h's NVSwitch as rank H*L + h (nccl_nvls_tree).
inline RankLayout nvls_tree_layout(int hosts, int gpus) {
  std::vector<int> host_of;
  for (int r = 0; r < hosts * gpus; ++r) host_of.push_back(r / gpus);
  for (int h = 0; h < hosts; ++h) host_of.push_back(h);
  return RankLayout(host_of);
}

// H hosts of L GPUs, then the network's SHARP switch alone on host H, outside every host (nccl_collnet).
inline RankLayout collnet_layout(int hosts, int gpus) {
  std::vector<int> host_of;
  for (int r = 0; r < hosts * gpus; ++r) host_of.push_back(r / gpus);
  host_of.push_back(hosts);
  return RankLayout(host_of);
}

}  // namespace colltune::test
