#pragma once
// Entry points of every algorithm: the registry table (src/registry.cpp) points at these, the
// hierarchical algorithms reuse the phase helpers, and tests call them directly.
#include <cstddef>
#include <memory>
#include <vector>

#include "colltune/collectives/algorithms/builder.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"

namespace colltune::coll::algo {

// ---- ring (ring.cpp, ring_steps.cpp) ---------------------------------------------------------
// The segment member `member` of a ring of q sends in step k (0..q-2) of a phase: in the
// reduce-scatter segment member-k-1 (so it ends holding the reduction of its own segment), in
// the allgather segment member-k (it starts holding its own). It receives what member-1 sends.
enum class RingPhase { reduce_scatter, allgather };
int ring_send_segment(RingPhase phase, int member, int k, int q);
// One ring: `members` in ring order (member i sends to member i+1, the last to the first),
// working on `range` of the buffer, which it cuts into members.size() balanced segments; member
// i ends the reduce-scatter holding the reduction of segment i. Every op carries `channel`.
struct RingSpec {
  std::vector<int> members;
  Block range;
  int channel = 0;
};
enum class RingShape { allreduce, reduce_scatter, allgather };
// The one definition of a ring (ring_steps.cpp): the rings of `rings`, all with the same member
// count, run in lockstep, chunk-pipelined in rounds of chunk_elems; ranks in no ring have no
// steps. Throws colltune::Error for rings of different sizes or members that are not ranks.
std::unique_ptr<StepSource> generate_rings(ScheduleHeader header, std::vector<RingSpec> rings, std::size_t chunk_elems,
                                           RingShape shape);
// The flat ring family: one ring over all ranks in rank order.
std::unique_ptr<StepSource> generate_ring(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
std::unique_ptr<StepSource> generate_reduce_scatter_ring(const RankLayout& layout, std::size_t count,
                                                         const AlgoOptions& options);
std::unique_ptr<StepSource> generate_allgather_ring(const RankLayout& layout, std::size_t count,
                                                    const AlgoOptions& options);
// Rounds a ring over `parts` members needs for `count` elements.
std::size_t ring_rounds(std::size_t count, std::size_t parts, std::size_t chunk_elems);
// Time of a ring phase over `group` on `count` elements (reduce: with gamma).
double ring_phase_cost(const RankLayout& layout, const std::vector<int>& group, std::size_t count,
                       std::size_t elem_size, std::size_t chunk_elems, bool reduce, const LevelCosts& costs);
std::vector<int> all_ranks(int nranks);

double cost_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size, const AlgoOptions& options,
                 const LevelCosts& costs);
double cost_reduce_scatter_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                const AlgoOptions& options, const LevelCosts& costs);
double cost_allgather_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                           const AlgoOptions& options, const LevelCosts& costs);

// ---- NCCL's rings (nccl_ring.cpp) ------------------------------------------------------------
// k channels, each a ring over all ranks on its 1/k of the buffer and on op channel c; inside
// a host ring c visits the local ranks in AlgoOptions::channel_orders[c] (or, without orders,
// L channels, channel c leaving every host from local rank c).
inline constexpr std::size_t kMaxNcclChannels = 64;  // NCCL's MAXCHANNELS
std::optional<std::string> nccl_ring_not_applicable(const RankLayout& layout, std::size_t count,
                                                    const AlgoOptions& options);
// The local-rank orders of the channels: AlgoOptions::channel_orders, or the default (L orders,
// order c = c+1, c+2, ..., c mod L). nccl_tree reads them as its chains.
std::vector<std::vector<int>> nccl_orders(const RankLayout& layout, const AlgoOptions& options);
// Why AlgoOptions::channel_orders do not fit the (uniform) layout or exceed `max_orders`.
std::optional<std::string> nccl_orders_problem(const RankLayout& layout, const AlgoOptions& options,
                                               std::size_t max_orders);
// The channels' rings (layout uniform, orders valid: nccl_ring_not_applicable).
std::vector<RingSpec> nccl_rings(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
int nccl_ring_channels(const RankLayout& layout, const AlgoOptions& options);
std::unique_ptr<StepSource> generate_nccl_ring(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
// Two hosts' priced schedule scaled to p ranks (LevelCosts::price); nullopt on two hosts or fewer.
std::optional<double> cost_nccl_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                     const AlgoOptions& options, const LevelCosts& costs);

// ---- NCCL's trees (nccl_tree.cpp) ------------------------------------------------------------
// 2k channels over the k chain orders of nccl_orders (at most 32): channel c < k runs host tree
// 0 over chain c, channel c + k host tree 1; a chain inside every host, NCCL's double binary
// tree across hosts, reduce up and broadcast down pipelined together (runTreeSplit).
std::optional<std::string> nccl_tree_not_applicable(const RankLayout& layout, std::size_t count,
                                                    const AlgoOptions& options);
int nccl_tree_channels(const RankLayout& layout, const AlgoOptions& options);
// Generated step by step (a 512-rank schedule is a few hundred KB of trees, not tens of MB of
// ops), proving its hosts' turn for the reference pricer (StepSource::turns_with_hosts).
std::unique_ptr<StepSource> generate_nccl_tree(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
// 2k: each channel's segment is its own pipeline. No closed-form cost (as dbtree).
std::size_t nccl_tree_pipeline_pieces(const RankLayout& layout, const AlgoOptions& options);
// The height of the channels' rank trees (chain plus host tree): an element is reduced at
// every level on its way to the root.
int nccl_tree_depth(const RankLayout& layout, const AlgoOptions& options);

// ---- recursive halving / doubling (rhd.cpp) -------------------------------------------------
// Generated step by step (stored, 460,000 steps on 16,384 ranks). rhd and rhd_near declare XOR
// period 1 on a power of two of ranks and a count they divide (StepSource::xor_period).
std::unique_ptr<StepSource> generate_rhd(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
std::unique_ptr<StepSource> generate_rhd_near(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
std::unique_ptr<StepSource> generate_reduce_scatter_rh(const RankLayout& layout, std::size_t count,
                                                       const AlgoOptions& options);
std::unique_ptr<StepSource> generate_allgather_rd(const RankLayout& layout, std::size_t count,
                                                  const AlgoOptions& options);
std::optional<double> cost_rhd(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                               const AlgoOptions& options, const LevelCosts& costs);
// Nearest partner first (SimGrid's rab_rdb): the same peers and bytes, the large exchanges near.
std::optional<double> cost_rhd_near(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                    const AlgoOptions& options, const LevelCosts& costs);
double cost_reduce_scatter_rh(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                              const AlgoOptions& options, const LevelCosts& costs);
double cost_allgather_rd(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                         const AlgoOptions& options, const LevelCosts& costs);

// ---- binomial tree (tree.cpp) -------------------------------------------------------------
// Pipelined binomial reduce to group[0] / broadcast from group[0] over `range`.
void binomial_reduce(ScheduleBuilder& b, const std::vector<int>& group, const Block& range, std::size_t chunk_elems);
void binomial_broadcast(ScheduleBuilder& b, const std::vector<int>& group, const Block& range,
                        std::size_t chunk_elems);
double binomial_phase_cost(const RankLayout& layout, const std::vector<int>& group, std::size_t count,
                           std::size_t elem_size, std::size_t chunk_elems, bool reduce, const LevelCosts& costs);
Schedule build_tree(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
double cost_tree(const RankLayout& layout, std::size_t bytes, std::size_t elem_size, const AlgoOptions& options,
                 const LevelCosts& costs);

// ---- double binary tree (dbtree.cpp) --------------------------------------------------------
// No closed-form cost: its pipeline shares ports unevenly, so the cost model prices the schedule.
// Generated step by step (on 16,384 ranks a tenth of a second to build, stored).
std::unique_ptr<StepSource> generate_dbtree(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
// 2: each half of the buffer is its own pipeline.
std::size_t dbtree_pipeline_pieces(const RankLayout& layout, const AlgoOptions& options);
// The height of its binary trees: a leaf's value is reduced at every level up to the root.
int dbtree_depth(const RankLayout& layout, const AlgoOptions& options);

// ---- hierarchical (hierarchical.cpp) ------------------------------------------------------
// Summation depths: the intra-host part's (L-1 around the host ring, lg L up the binomial
// tree) plus the inner algorithm's across the hosts.
int hierarchical_depth(const RankLayout& layout, const AlgoOptions& options);
int hierarchical_leader_depth(const RankLayout& layout, const AlgoOptions& options);
std::optional<std::string> hierarchical_not_applicable(const RankLayout& layout, std::size_t count,
                                                       const AlgoOptions& options);
Schedule build_hierarchical(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
// The inner algorithm is priced through LevelCosts::price when it has no closed form; nullopt
// when it has none and the costs cannot price it.
std::optional<double> cost_hierarchical(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                        const AlgoOptions& options, const LevelCosts& costs);
std::optional<std::string> hierarchical_leader_not_applicable(const RankLayout& layout, std::size_t count,
                                                              const AlgoOptions& options);
Schedule build_hierarchical_leader(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
std::optional<double> cost_hierarchical_leader(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                               const AlgoOptions& options, const LevelCosts& costs);

// ---- parameter server (ps.cpp) --------------------------------------------------------------
// Workers push shard s of the buffer to server s, which sums them and sends the sum back.
struct PsPlan {
  int workers = 0;           // data ranks 0..workers-1
  std::vector<int> servers;  // server s's rank
  bool dedicated = false;    // servers are helpers (the layout's last ranks)
};
// The plan for the options (AlgoOptions::ps_servers, ps_colocated); throws colltune::Error where
// ps_not_applicable says no.
PsPlan ps_plan(const RankLayout& layout, const AlgoOptions& options);
std::optional<std::string> ps_not_applicable(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
Schedule build_ps(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
// A server adds W-1 contributions into the first (or its own) one.
int ps_depth(const RankLayout& layout, const AlgoOptions& options);

// ---- NCCL's single-node NVLS (nccl_nvls.cpp) ---------------------------------------------------
// Ranks 0..L-1 are one host's GPUs, rank L the NVSwitch (a helper): every GPU sends its shards to
// the switch, which sums them and sends the sums back to every GPU.
std::optional<std::string> nccl_nvls_not_applicable(const RankLayout& layout, std::size_t count,
                                                    const AlgoOptions& options);
// The default pipeline: chunk_elems 0 cuts a shard into up to kNvlsRounds chunks of at least
// kNvlsMinChunk elements (64 KiB of fp32), so that the sums flow down while later chunks go up.
inline constexpr std::size_t kNvlsRounds = 16;
inline constexpr std::size_t kNvlsMinChunk = 16384;
std::size_t nvls_chunk_elems(std::size_t shard_elems, std::size_t chunk_elems);
Schedule build_nccl_nvls(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
std::size_t nccl_nvls_pipeline_pieces(const RankLayout& layout, const AlgoOptions& options);

// ---- NCCL's multi-node NVLS-Tree (nccl_nvls_tree.cpp) ------------------------------------------
// H hosts of L GPUs, each host's last rank its NVSwitch (the last H ranks, helpers): the switch
// sums the host's GPUs, NCCL's double binary tree across hosts (GPU g of each host the endpoint of
// the segments it heads), the switch writes the final sums back to the GPUs.
std::optional<std::string> nccl_nvls_tree_not_applicable(const RankLayout& layout, std::size_t count,
                                                         const AlgoOptions& options);
// Generated step by step (a 16-host pipeline of 32 rounds stored was 154,624 ops built per size).
std::unique_ptr<StepSource> generate_nccl_nvls_tree(const RankLayout& layout, std::size_t count,
                                                    const AlgoOptions& options);
// 1 (the in-switch sum) + the host trees' height.
int nccl_nvls_tree_depth(const RankLayout& layout, const AlgoOptions& options);
// 2L (two segments per GPU of a host) with a caller's chunk_elems, else 0.
std::size_t nccl_nvls_tree_pipeline_pieces(const RankLayout& layout, const AlgoOptions& options);

// ---- NCCL's CollNet Direct with SHARP (nccl_collnet.cpp) ---------------------------------------
// H hosts of L GPUs and, as the last rank alone on a host of its own, the network's SHARP switch
// (a helper): heads reduce their shard in the host, the switch sums the hosts, heads broadcast.
std::optional<std::string> nccl_collnet_not_applicable(const RankLayout& layout, std::size_t count,
                                                       const AlgoOptions& options);
Schedule build_nccl_collnet(const RankLayout& layout, std::size_t count, const AlgoOptions& options);
// L-1 (a head adds its host-mates' shards) + 1 (the in-switch sum).
int nccl_collnet_depth(const RankLayout& layout, const AlgoOptions& options);

}  // namespace colltune::coll::algo
