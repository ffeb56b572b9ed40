#pragma once
// The analytical cost model: prices a registered algorithm on a topology with the closed-form
// cost hint of its registry entry (or, where it has none, the reference pricer on its schedule), using alpha/beta per link level derived from the topology's
// routes and gamma from the devices' reduction rate. Cheap (microseconds): the tuner sweeps it.
//
// Derivation (see docs/simulator.md):
// - intra-host alpha/beta: the route between two ranks of one host (alpha = route latency,
//   beta = 1 / bottleneck bandwidth). inter-host: the route between ranks on different hosts.
//   Heterogeneous machines: the worst latency and the worst bandwidth found over a deterministic
//   sample of pairs (first/last/middle ranks of up to 16 hosts, and neighbouring hosts), taken
//   separately - the model is conservative.
//   A machine with one rank per host uses the inter-host figures for both levels; a machine
//   with one host uses the intra-host figures for both.
// - gamma: 1 / the slowest rank device's reduce_gbps (0 when no device states a rate).
// - switch_helpers: the last ranks are switches that reduce (topo::with_nvls_switch: every
//   host's NVSwitch; topo::with_sharp_switch: the network's SHARP switch): their ports are per
//   peer, they reduce at the last switch's own rate (gamma is the GPUs') and their messages cost
//   the worst route latency between the last switch and the GPUs it serves (its host's, or all).
// - beta_host: 1 / the capacity of the narrowest host's links to other hosts (its NICs'
//   network links, summed, in the weaker direction), so that messages leaving one host at once
//   share them: eight GPUs behind one NIC get an eighth each.
// - separate_level_ports: rank 0's routes to a host-mate and to another host start on
//   different links and its routes back end on different links (NVLink and NIC), so hints that
//   share a rank's port among its messages (dbtree) give each level its own port.
// - fp16 compression (4-byte elements only): the algorithm is priced on half the bytes with
//   2-byte elements, plus two casts (compress before, decompress after), each a pass over the
//   fp32 payload at the device's reduction rate.
#include <cstddef>
#include <string>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

struct CollectiveRequest {
  std::string algorithm = "ring";  // registry id
  std::size_t bytes = 0;           // payload per rank (the allreduce buffer size)
  std::size_t elem_size = 4;       // bytes per element (4 for fp32)
  bool fp16_compress = false;      // halves wire bytes of fp32 payloads, adds cast time
  coll::AlgoOptions options;
};

// What the algorithm sees on the wire for a request: compression applied.
struct WireRequest {
  std::size_t bytes = 0;
  std::size_t elem_size = 4;
  bool compressed = false;
};
// Throws colltune::Error when elem_size is 0 or bytes is not a multiple of it.
WireRequest wire_request(const CollectiveRequest& request);

// Whether a schedule's price comes from the closed form of its family of sizes where one holds
// (pipeline_closed_form.hpp) or is always the reference pricer's run of that size. A family's
// first price costs a parametric run and two whole runs at its piece's ends, and every further
// size of the family is free: a caller that prices many sizes wants it. A caller that prices one
// size on each machine (the bottleneck line of a one-size `simulate`, on each what-if machine)
// does not: the size priced whole is one run. Both are the reference pricer's price, within
// 1e-12 (the family's pieces are checked against it).
enum class SizeFamilies { use, skip };

// Alpha/beta per level and gamma, derived once per topology and reused.
struct CostModel {
  explicit CostModel(const topo::Topology& topology);
  // Only ranks 0..nranks-1 of the topology take part. Throws colltune::Error when the topology
  // has fewer ranks.
  CostModel(const topo::Topology& topology, int nranks);
  // With NCCL's channels given (NCCL's model of the machine as measured: sim::NcclPricer),
  // rather than searched on `topology`.
  CostModel(const topo::Topology& topology, int nranks, NcclScheduleChannels nccl);
  coll::LevelCosts levels;
  RankLayout layout;
  double cast_us_per_byte = 0;  // fp32<->fp16 conversion cost, per fp32 byte and per cast
  // NCCL's ring channels on the machine (nccl_channel_orders, nccl_model.hpp); empty where NCCL's
  // model does not describe it.
  std::vector<std::vector<int>> nccl_ring_orders;
  // NCCL's tree channels: the tree search's chains and pattern (nccl_schedule_channels).
  std::vector<std::vector<int>> nccl_tree_orders;
  bool nccl_simple_tree = false;
  // How time_us prices schedules without a closed form (SizeFamilies).
  SizeFamilies families = SizeFamilies::use;
  // The options the algorithm runs with on this machine: `options`, with NCCL's ring (tree)
  // channels as channel_orders where the algorithm takes them (Algorithm::nccl_ring_channels,
  // nccl_tree_channels) and `options` gives none; the tree's pattern with its chains.
  coll::AlgoOptions options_for(const coll::Algorithm& algorithm, const coll::AlgoOptions& options) const;
  // Time of compressing and decompressing `fp32_bytes` (two casts).
  double cast_us(std::size_t fp32_bytes) const;
  // Predicted time (us) of one collective; +infinity when the algorithm is not applicable.
  // Throws colltune::Error for an unknown algorithm id or a malformed request.
  double time_us(const CollectiveRequest& request) const;
  // Same, for an algorithm already looked up (the tuner's inner loop).
  double time_us(const coll::Algorithm& algorithm, const CollectiveRequest& request) const;
};

// Choosing the fastest of several predictions: `candidate` replaces `incumbent` only when it is
// faster by more than rounding noise (1e-9 relative), so exact ties, and predictions equal up
// to the order of floating-point operations, keep the first choice.
inline bool clearly_faster(double candidate, double incumbent) { return candidate < incumbent * (1.0 - 1e-9); }

// Where price_pipeline's settling search begins; either way a price is within 1e-9 of the
// whole schedule's and depends on nothing priced before it. A caller that prices a pipeline at
// many buffer sizes (the step simulator's buffers, each with its own last chunks) wants the
// earliest settled probe, from 4 rounds: every further size then costs two short runs. A caller
// that prices a few sizes whose rounds double (NcclPricer's powers of two) does not: a probe
// below the pipeline's window (twice its reduction's depth) costs about as much as the request
// it serves, and NCCL's many-channel trees settle only past it (on 16 H100 hosts at 32 rounds,
// their window 22), while a probe at a power of two p >= window runs p, p + 1 and 2p rounds, two
// of them requests of their own.
enum class PipelineProbes { from_four_rounds, from_window };

// The algorithm's closed-form hint where it has one for these options, else the reference
// pricer on its schedule (sim/pricer.hpp): the same machine model either way.
double hint_or_price(const coll::Algorithm& algorithm, const RankLayout& layout, std::size_t bytes,
                     std::size_t elem_size, const coll::AlgoOptions& options, const coll::LevelCosts& levels,
                     PipelineProbes probes = PipelineProbes::from_four_rounds,
                     SizeFamilies families = SizeFamilies::use);

// Prices a chunk pipeline without a closed form (Algorithm::pipeline_pieces): a long pipeline
// costs its fill and drain plus one steady round per round, so once a short pipeline of the
// same chunks has settled (found once per pipeline by doubling from 4 rounds, or from the
// window: `probes`; three short runs a probe; then two short runs with each request's last
// chunks) it is extended by the steady round's cost (src/steady_rounds.hpp states the rule and
// its checks); pipelines too short for that to pay are priced whole (*extrapolated says which).
// Tests hold it to the whole price within 1e-9.
double price_pipeline(const coll::Algorithm& algorithm, const RankLayout& layout, std::size_t count,
                      std::size_t elem_size, const coll::AlgoOptions& options, const coll::LevelCosts& levels,
                      bool* extrapolated = nullptr, PipelineProbes probes = PipelineProbes::from_four_rounds,
                      SizeFamilies families = SizeFamilies::use);
// The settling searches' probes run so far (every thread's; three short pipelines each), for
// tests and benchmarks.
std::size_t steady_round_probes();
// Forgets every price the pricing memos keep (price_by_family's families and whole schedules,
// price_pipeline's settled pipelines), so that the next request prices as a fresh process
// would: for benchmarks of a cold price. Prices are the same either way.
void forget_prices();

// Derivations used by CostModel.
// The first `nranks` ranks of topology.rank_layout(), hosts left empty dropped and the rest
// renumbered densely in order (all ranks: rank_layout() itself).
RankLayout layout_of_first_ranks(const topo::Topology& topology, int nranks);
coll::LevelCosts derive_level_costs(const topo::Topology& topology, int nranks);
// us per byte at the slowest rank device's reduction rate (0 when none states one).
double reduce_us_per_byte(const topo::Topology& topology, int nranks);

}  // namespace colltune::sim
