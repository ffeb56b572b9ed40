#pragma once
// Internal: one pass of NCCL's channel search at fixed speeds and path types (the recursion of
// src/graph/search.cc: ncclTopoSearchRec and what it calls). It builds channels one after the
// other; each channel takes its bandwidth from the links it uses, and every complete set of
// channels is compared with the best found so far (ncclTopoCompareGraphs).
#include <cstdint>
#include <map>
#include <utility>

#include "nccl_search.hpp"

namespace colltune::sim::nccl {

// How the next GPU of a channel is chosen.
enum class Order { free, pci, replay };

// An endpoint of a path the search follows.
struct End {
  NodeKind kind = NodeKind::gpu;  // gpu, net or nvs
  int index = -1;                 // -1: no endpoint (a channel's first GPU on one node)
};

class ChannelSearcher {
 public:
  // `node` is the working copy whose link bandwidths the search consumes and restores.
  ChannelSearcher(NodeGraph& node, const SearchContext& context);
  // Searches with `trial`'s speeds, types and pattern; `best` takes every better graph.
  // `budget` is NCCL's step budget (the time argument): on return 0 means it ran out, -1 that
  // a graph with max_channels was found.
  void run(SearchGraph& trial, SearchGraph& best, long& budget);

 private:
  NodeGraph& g_;
  const SearchContext& ctx_;
  SearchGraph* tmp_ = nullptr;
  SearchGraph* best_ = nullptr;
  std::vector<std::uint64_t> used_;  // per GPU, bit c: the GPU is on the channel being built
  std::map<std::pair<int, int>, std::vector<int>> nets_cache_;  // select_nets by (GPU, type limit)

  int ngpus() const { return g_.num_gpus(); }
  int channel() const { return tmp_->nchannels; }
  bool is_tree() const;

  void search_rec(long& time);
  void search_rec_net(int back_to_net, int back_to_first, long& time);
  void try_net(int n, int back_to_net, int back_to_first, long& time);
  void rec_gpu(int gpu, int step, int back_to_net, int back_to_first, Order order, long& time);
  void back_to_net_step(int gpu, int step, int back_to_net, int back_to_first, Order order, long& time);
  void next_step(int gpu, int step, int back_to_net, int back_to_first, Order order, long& time);
  void channel_done(long& time);
  void try_gpu(int step, int back_to_net, int back_to_first, Order order, End from, int gpu, long& time);
  void try_nvls(int gpu, long& time);
  void try_collnet_direct(int gpu, long& time);

  bool follow(End from, End to, float mult);
  bool follow_links(const Path& path, int start_node, int steps, float bw, int* done);
  const Path& path(End from, End to) const;
  int node_of(End e) const;

  // A candidate next GPU with its ncclGpuScore.
  struct Score {
    int g, start, intra_hops, intra_bw, inter_hops = 0, inter_pci = 0, inter_bw = 0;
  };
  std::vector<Score> scores_;                 // scratch of next_gpus
  std::vector<std::vector<int>> next_;        // per channel and step, the GPUs tried next
  void next_gpus(int gpu, int sort_net, std::vector<int>& next);
  const std::vector<int>& select_nets(int gpu);
  bool check_net(int start_net, int n, int step) const;
  bool better(const SearchGraph& graph, const SearchGraph& ref) const;
  int pci_bw(int gpu) const;
};

}  // namespace colltune::sim::nccl
