#pragma once
// NCCL's own performance model: what NCCL (the release of NcclOptions::version) predicts for a
// collective on a machine, and which algorithm, protocol and channel count it picks.
//
// Three stages, each following NCCL's source (docs/nccl-model.md gives the details):
//  1. The machine as NCCL's topology code sees one node (sim/nccl_model/src/nccl_topo.cpp): GPUs,
//     NVSwitch, PCIe switches, CPUs, NICs, with NCCL's own link figures (NVLink per link by
//     GPU generation, PCIe by generation and width, CPU links by CPU model, NICs by speed), and
//     NCCL's paths between them (src/graph/topo.cc, paths.cc). Every node is assumed to be
//     built like the node of rank 0, so a 4096-GPU machine costs one node's work.
//  2. The channel search (src/graph/search.cc): for ring, tree, NVLS and CollNet, how many
//     channels NCCL finds and at what per-channel bandwidth, then the channel duplication of
//     the search and of the connection setup (connect.cc).
//  3. The tuning model (src/graph/tuning.cc) and the choice (src/enqueue.cc): the
//     [algorithm][protocol] time table that NCCL hands a tuner plugin, its minimum, and the
//     channel reduction for small messages.
#include <array>
#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/sim/nccl_constants.hpp"
#include "colltune/sim/nccl_names.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

namespace nccl {
struct NodeGraph;
}

// The CPU as NCCL's model distinguishes it (topo::NcclCpu): the vendor picks the network
// overhead and the multi-node LL bandwidth cap; the class the bandwidth NCCL assumes between
// two CPUs (src/graph/topo.h: BDW_QPI_BW 6, SKL_QPI_BW 10, SRP_QPI_BW 22, ERP_QPI_BW 40, AMD
// 16, and 24/32 for Zen 3/4 and 5 where NCCL detects generations). A topology's CPU devices may
// name it (`nccl_cpu`; an NCCL dump's CPUID does); the model's option overrides.
using topo::NcclCpu;
using topo::parse_nccl_cpu;  // throws colltune::Error listing the names

// NCCL's path types (PATH_* in src/graph/topo.h), from nearest to farthest.
enum class NcclPath { loc = 0, nvl = 1, nvb = 2, c2c = 3, pix = 4, pxb = 5, p2c = 6, pxn = 7, phb = 8, sys = 9,
                      net = 10, dis = 11 };
std::string_view to_string(NcclPath path);  // NCCL's spelling: LOC, NVL, NVB, ..., SYS, NET, DIS

// The channel settings NCCL reads from the environment (0 = unset): NCCL_MIN_NCHANNELS and
// NCCL_MAX_NCHANNELS (legacy NCCL_MIN_NRINGS, NCCL_MAX_NRINGS) bound the ring and tree channels;
// NCCL_MIN_CTAS and NCCL_MAX_CTAS bound them too, and the NVLS channels. connect.cc keeps the
// first channels up to the maximum, then copies them up to the minimum; transport/nvls.cc clamps
// the NVLS channels into [MIN_CTAS, MAX_CTAS]. NCCL's time model keeps the search's channels
// (its pick barely moves); what changes is which links the channels use, which the price sees.
struct NcclChannelEnv {
  int min_nchannels = 0;
  int max_nchannels = 0;
  int min_ctas = 0;
  int max_ctas = 0;
  bool empty() const { return min_nchannels == 0 && max_nchannels == 0 && min_ctas == 0 && max_ctas == 0; }
  auto operator<=>(const NcclChannelEnv&) const = default;  // ordered: a key of the calibrator's maps
};
// Whether NAME is one of the settings above.
bool is_nccl_channel_setting(std::string_view name);
// Sets one from "NAME=VALUE" (VALUE a channel count, 1..1024); throws colltune::Error naming the
// setting for another name or a value that is not one.
void set_nccl_channel_setting(NcclChannelEnv& env, std::string_view assignment);
// "NCCL_MIN_CTAS=24", "NCCL_MAX_NCHANNELS=8": the set ones, in NcclChannelEnv's order.
std::vector<std::string> setting_lines(const NcclChannelEnv& env);
// The same joined by ", "; "" if none.
std::string to_string(const NcclChannelEnv& env);

struct NcclOptions {
  NcclVersion version = NcclVersion::installed();
  int nranks = 0;  // ranks 0..nranks-1 of the topology form the communicator; 0 = all of them
  // Unset: the class rank 0's host names on its CPUs (topo::Device::nccl_cpu), else intel_srp.
  std::optional<NcclCpu> cpu;
  // NCCL_COLLNET_ENABLE=1: CollNet (and multi-node NVLS) where the network switches reduce
  // (SHARP). NCCL's default is off.
  bool collnet = false;
  // NCCL_ALGO / NCCL_PROTO as NCCL reads them: "Ring", "^LL128", "Tree,Ring",
  // "allreduce:NVLS;broadcast:Ring" (prefixes from 2.24 on). Empty = unset.
  std::string algo_env;
  std::string proto_env;
  NcclChannelEnv channel_env;
  // NCCL_NET_OVERHEAD in us; negative = NCCL's default for the CPU vendor.
  double net_overhead_us = -1;
  // The network latency the net plugin reports (graph latencyInter). NCCL's IB and socket
  // plugins report 0.
  double net_latency_us = 0;
  // NCCL_PXN_DISABLE=1 turns off sending to another GPU's NIC through NVLink.
  bool pxn = true;
  // Compute capability of GPUs whose topology gives none (e.g. the flat and torus presets);
  // 0 = required from the topology.
  int compute_capability = 0;
};

// One search graph (struct ncclTopoGraph): the channels NCCL found for an algorithm.
struct ChannelPlan {
  int channels = 0;       // nChannels of the search (0: the algorithm has no graph here)
  double bw_intra = 0;    // per channel, GB/s, inside a node
  double bw_inter = 0;    // per channel, GB/s, across nodes
  NcclPath type_intra = NcclPath::loc;
  NcclPath type_inter = NcclPath::pix;
  bool same_channels = true;
  bool cross_nic = false;
  bool simple_tree = false;  // the tree search fell back to the simple tree pattern (sm90+)
  // Per channel, the node's local ranks (0..ranks_per_node-1) in the order the channel visits
  // them: a ring's order (it closes back to the first), a tree's chain, an NVLS/CollNet
  // channel's head first. The same order on every node.
  std::vector<std::vector<int>> orders;
  // Per channel, the node's NIC it enters from and leaves by (index among the node's NICs in
  // topology order); -1 on one node.
  std::vector<int> nic_in;
  std::vector<int> nic_out;
};

// What NCCL's model knows about the communicator.
struct NcclSystem {
  int nranks = 0;
  int nnodes = 0;
  int ranks_per_node = 0;
  int cc_min = 0;
  int cc_max = 0;
  NcclCpu cpu = NcclCpu::intel_srp;
  int nvswitches = 0;          // NVSwitch devices of a node (colltune aggregates a node's chips in one)
  bool nvls_support = false;   // NVSwitch with in-switch reduction, sm90+, more than one GPU
  bool collnet_support = false;  // CollNet enabled and the network switches reduce (SHARP)
  bool switch_reduces = false;   // the node's NVSwitch reduces in the switch (topology: switch_reduction nvls)
  bool network_reduces = false;  // a network switch reduces (topology: switch_reduction sharp)
  int nics = 0;                // NICs of a node
  double max_bw = 0;           // the search's maxBw and totalBw (GB/s)
  double total_bw = 0;
  int comm_channels = 0;       // channels after connection setup (ring/tree kernels use these)
  int nvls_channels = 0;       // channels of the NVLS kernels
  // Per comm channel, the search channel (ring and tree) it is a copy of: NCCL duplicates the
  // search's channels, keeps the first under a maximum and copies them up to a minimum.
  std::vector<int> comm_channel_source;
};

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  int channels = 0;       // after NCCL's reduction for small messages
  double time_us = 0;     // NCCL's predicted time (the cost table's minimum)
};

// A cell's latency in the parts NCCL's formula (tuning.cc) combines: base_us once per call,
// intra_us per step inside a node and inter_us per step across nodes, over the steps NCCL
// counts (Ring allreduce: 2(n-1), 2(nNodes-1) of them across nodes; Tree: 2(ppn-1) inside,
// 2 log2(nNodes) across; NVLS: one inside (its latency replaces the base), one across on several
// nodes; NVLSTree: one inside, 2 log2(nNodes) across; CollNet Direct/Chain: as NCCL's formula;
// PAT and Ring broadcast/reduce: all in base_us). base + intra_steps x intra + inter_steps x
// inter is latency() up to float rounding (NCCL's float arithmetic).
struct NcclLatencyParts {
  double base_us = 0;
  double intra_us = 0;
  double inter_us = 0;
  double intra_steps = 0;
  double inter_steps = 0;
};

// The cost table NCCL hands the tuner plugin: [algorithm][protocol], -1 = not available.
using NcclCostTable = std::array<std::array<float, kNcclNumProtos>, kNcclNumAlgos>;

class NcclModel {
 public:
  // Throws colltune::Error when the machine does not fit NCCL's model (nodes of different
  // shapes, GPUs without a compute capability, nranks not a whole number of nodes).
  explicit NcclModel(const topo::Topology& topology, NcclOptions options = {});
  NcclModel(const topo::Topology& topology, NcclVersion version, int nranks = 0);

  const NcclSystem& system() const { return system_; }
  const NcclConstants& constants() const { return *constants_; }
  const NcclOptions& options() const { return options_; }
  // The search graph an algorithm runs on (PAT on the tree's, NVLSTree on the NVLS one).
  const ChannelPlan& channels(NcclAlgo algo) const;
  // The orders of the channels the ring or tree kernels run on (ChannelPlan::orders of
  // NcclSystem::comm_channel_source): the search's own orders where every one of them runs
  // equally often (NCCL's duplications, the default), else one order per comm channel.
  std::vector<std::vector<int>> comm_orders(NcclAlgo algo) const;

  // NCCL's comm->bandwidths / comm->latencies: 0 bandwidth = disabled or not available.
  float bandwidth(NcclColl coll, NcclAlgo algo, NcclProto proto) const;
  float latency(NcclColl coll, NcclAlgo algo, NcclProto proto) const;
  NcclLatencyParts latency_parts(NcclColl coll, NcclAlgo algo, NcclProto proto) const;
  // The fraction of the NVLink rate NCCL's model grants NVLS and NVLSTree inside a node, where
  // the switch's multimem loads and stores move the data (tuning.cc): nvlsEfficiency of the GPU
  // generation x (nCh-1)/nCh, nCh the NVLS search graph's channels (one per GPU: 0.85 x 7/8 on
  // an 8-GPU H100 node), or 5/6 where the release has no nvlsEfficiency (2.21); 1 for every
  // other algorithm.
  double nvls_link_fraction(NcclAlgo algo) const;
  // The chunk NCCL's NVLS or NVLSTree kernels move per channel and head for an allreduce of
  // `bytes` on `channels` channels (enqueue.cc's chunk sizing, from NCCL_NVLS_CHUNKSIZE down to
  // 16 KiB as the buffer shrinks against channels x heads x chunk; NVLSTree at most 64 KiB from
  // 4 nodes), in bytes; 0 for every other algorithm. The heads are the NVLS search's channels.
  std::size_t nvls_chunk_bytes(NcclAlgo algo, std::size_t bytes, int channels) const;
  // ncclTopoGetAlgoTime for one pipelined operation; +infinity where NCCL would not run it.
  double time_us(NcclAlgo algo, NcclProto proto, NcclColl coll, std::size_t bytes) const;
  // The table NCCL hands a tuner plugin for this call (updateCollCostTable).
  NcclCostTable cost_table(NcclColl coll, std::size_t bytes) const;
  // NCCL's pick: the smallest entry of the cost table, then its channel count for the size.
  // Throws colltune::Error when nothing is available (NCCL_ALGO/NCCL_PROTO rule out every cell).
  NcclChoice choose(NcclColl coll, std::size_t bytes) const;
  // Channels NCCL runs `algo`/`proto` with for `bytes` (topoGetAlgoInfo's reduction).
  int channels_for(NcclAlgo algo, NcclProto proto, std::size_t bytes) const;
  // Whether NCCL_ALGO / NCCL_PROTO (NcclOptions::algo_env, proto_env) leave an algorithm or a
  // protocol on for `coll` (LL128's automatic default counts as on).
  bool env_allows(NcclColl coll, NcclAlgo algo) const;
  bool env_allows(NcclColl coll, NcclProto proto) const;
  // Why NCCL does not run `algo` for `coll` on this communicator whatever NCCL_ALGO says (no
  // in-switch reduction, CollNet off, one node, ...), in a few words; nullopt where it does.
  std::optional<std::string> unavailable(NcclColl coll, NcclAlgo algo) const;

 private:
  NcclOptions options_;
  const NcclConstants* constants_ = nullptr;
  NcclSystem system_;
  std::array<ChannelPlan, kNcclNumAlgos> plans_;
  int collnet_heads_ = 0;
  std::array<std::array<std::array<float, kNcclNumProtos>, kNcclNumAlgos>, kNcclNumColls> bw_{};
  std::array<std::array<std::array<float, kNcclNumProtos>, kNcclNumAlgos>, kNcclNumColls> lat_{};
  std::array<std::array<std::array<NcclLatencyParts, kNcclNumProtos>, kNcclNumAlgos>, kNcclNumColls> lat_parts_{};
  std::array<std::array<int, kNcclNumProtos>, kNcclNumAlgos> max_threads_{};
  std::array<std::array<long, kNcclNumProtos>, kNcclNumAlgos> thread_threshold_{};
  std::array<std::array<int, kNcclNumAlgos>, kNcclNumColls> algo_on_{};    // NCCL_ALGO: 0 off
  std::array<std::array<int, kNcclNumProtos>, kNcclNumColls> proto_on_{};  // NCCL_PROTO: 0 off

  void search(const nccl::NodeGraph& graph);
  void set_comm_channels(int search_channels);
  void tune();
  float algo_time(NcclColl coll, NcclAlgo algo, NcclProto proto, std::size_t bytes) const;
  bool offered(NcclColl coll, NcclAlgo algo) const;
};

// NCCL's ring channels on ranks 0..nranks-1 of the machine (0 = all) as
// coll::AlgoOptions::channel_orders (the nccl_ring algorithm): per channel of the ring search,
// the local ranks of a node in the order the ring visits them. Empty where NCCL's model does
// not fit the machine (NcclModel throws: GPUs without a compute capability, nodes of different
// shapes, no GPUs), and nccl_ring then takes its own rotated orders.
std::vector<std::vector<int>> nccl_channel_orders(const topo::Topology& topology, int nranks = 0);
// NCCL's ring and tree channels as the schedules nccl_ring and nccl_tree take them, from one
// model: the ring search's orders (as nccl_channel_orders), the tree search's chains (each a
// node's local ranks from the chain's head down) and whether that search fell back to the TREE
// pattern (coll::AlgoOptions::nccl_simple_tree). Empty orders where NCCL's model does not fit.
struct NcclScheduleChannels {
  std::vector<std::vector<int>> ring;
  std::vector<std::vector<int>> tree;
  bool simple_tree = false;
};
NcclScheduleChannels nccl_schedule_channels(const topo::Topology& topology, int nranks = 0);

// NCCL's channel searches are memoised by everything they read (one node's graph, the release,
// the GPUs' compute capability, the request): the same node is searched once per process. For
// tests that compare a search with a fresh one.
void forget_nccl_searches();

// nccl-tests' bus bandwidth factor: allreduce 2(n-1)/n; reduce-scatter, allgather (n-1)/n;
// broadcast, reduce 1.
double nccl_bus_factor(NcclColl coll, int nranks);

}  // namespace colltune::sim
