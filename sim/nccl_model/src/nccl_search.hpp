#pragma once
// Internal: NCCL's channel search (src/graph/search.cc, ncclTopoCompute) on one node.
#include <array>
#include <vector>

#include "colltune/sim/nccl_constants.hpp"
#include "nccl_topo.hpp"

namespace colltune::sim::nccl {

// NCCL_TOPO_PATTERN_* (src/graph/graph.h).
enum class Pattern { balanced_tree = 1, split_tree = 2, tree = 3, ring = 4, nvls = 5, collnet_direct = 6 };

// What to search for (the fields init.cc sets before calling ncclTopoCompute).
struct SearchRequest {
  Pattern pattern = Pattern::ring;
  int min_channels = 1;
  int max_channels = 1;
  bool collnet = false;  // only NICs that reduce in the network (CollNet graphs)
};

// The result (struct ncclTopoGraph).
struct SearchGraph {
  Pattern pattern = Pattern::ring;
  bool collnet = false;
  int min_channels = 1;
  int max_channels = 1;
  int nchannels = 0;
  float bw_intra = 0;
  float bw_inter = 0;
  NcclPath type_intra = NcclPath::loc;
  NcclPath type_inter = NcclPath::pix;
  bool same_channels = true;
  int cross_nic = 0;  // 0, 1, or 2 (rings may leave by another NIC, in channel pairs)
  int nhops = 0;
  std::vector<std::vector<int>> intra;     // per channel: GPU indices in visiting order
  std::vector<std::array<int, 2>> inter;   // per channel: NET entered, NET left (-1: none)
};

// The search context that does not change between searches of one communicator.
struct SearchContext {
  const NcclConstants* constants = nullptr;
  int cc_min = 0;
  bool inter = false;  // more than one node: channels enter and leave through NICs
};

// ncclTopoCompute, including the channel duplication of the search (ncclTopoDupChannels) and
// the fallback of one slow channel in GPU order when nothing is found (not for NVLS/CollNet).
// `node` is copied: the search subtracts bandwidth from its links as channels take them.
// Memoised: each distinct node, context and request is searched once per process.
SearchGraph search_channels(const NodeGraph& node, const SearchContext& context, const SearchRequest& request);
// Forgets the searches done (sim::forget_nccl_searches).
void forget_searches();

// The search's maxBw and totalBw (ncclTopoSearchInit).
struct SearchBounds {
  float max_bw = 0;
  float total_bw = 0;
};
SearchBounds search_bounds(const NodeGraph& node, bool inter);

}  // namespace colltune::sim::nccl
