// The one table of algorithms. Each entry's description states steps and bytes on the wire;
// the file of each algorithm (src/algorithms/) explains it in full.
#include "colltune/collectives/registry.hpp"

#include <algorithm>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

std::optional<std::string> always(const RankLayout& /*layout*/, std::size_t /*count*/, const AlgoOptions& /*options*/) {
  return std::nullopt;
}

std::optional<std::string> power_of_two(const RankLayout& layout, std::size_t /*count*/, const AlgoOptions& /*options*/) {
  if (algo::is_pow2(layout.nranks())) return std::nullopt;
  return "needs a power-of-two number of ranks (got " + std::to_string(layout.nranks()) + ")";
}

// A stored schedule as the registry's step source.
template <Schedule (*Build)(const RankLayout&, std::size_t, const AlgoOptions&)>
std::unique_ptr<StepSource> stored(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  return std::make_unique<StoredSteps>(Build(layout, count, options));
}

// Summation depths (Algorithm::summation_depth).
int ring_depth(const RankLayout& layout, const AlgoOptions& /*options*/) { return std::max(layout.nranks() - 1, 0); }
int log_depth(const RankLayout& layout, const AlgoOptions& /*options*/) { return algo::ceil_log2(layout.nranks()); }
int one_depth(const RankLayout& /*layout*/, const AlgoOptions& /*options*/) { return 1; }
int no_depth(const RankLayout& /*layout*/, const AlgoOptions& /*options*/) { return 0; }

const RuntimeSet kColltuneOnly{Runtime::colltune};
// NCCL runs these under its own name (nccl_name), alone or under Horovod (one ncclAllReduce per
// fused buffer). The schedule here is one channel of it; NCCL runs several, which sim::NcclModel
// prices (the tuner prices NCCL's runs with it where the topology fits NCCL's model).
const RuntimeSet kNcclToo{Runtime::colltune, Runtime::nccl, Runtime::horovod};
// Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE: reduce-scatter in each host, an allreduce of each
// shard across hosts (MPI_Allreduce), allgather in each host. NCCL alone has no such path.
const RuntimeSet kHorovodToo{Runtime::colltune, Runtime::horovod};
// The parameter-server baseline runs under its own runtime (tuner: --runtime ps:servers=S).
const RuntimeSet kPsOnly{Runtime::ps};

// Entries name only the fields they set (designated initializers); the others keep their
// defaults on purpose, which GCC 12 would report as missing initializers. The table is laid out
// by hand, a few fields a line: clang-format would reflow the whole statement, one field a line,
// whenever any line of it changes.
// clang-format off
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
std::vector<Algorithm> make_table() {
  using namespace algo;
  const auto ar = Collective::allreduce;
  const auto rs = Collective::reduce_scatter;
  const auto ag = Collective::allgather;
  return {
      {.id = "ring", .name = "ring allreduce",
       .description = "reduce-scatter + allgather around a ring, chunk-pipelined: 2(p-1) steps per chunk round, "
                      "2(p-1)/p n bytes per rank",
       .collective = ar, .nccl_name = "ring", .runtimes = kNcclToo, .summation_depth = ring_depth,
       .not_applicable = always, .schedule = generate_ring, .cost = cost_ring},
      // colltune's schedule of NCCL's ring (its channels and NICs), for simulating and running it;
      // the tuner's NCCL and Horovod runtimes price NCCL's ring with NCCL's own model under `ring`.
      {.id = "nccl_ring", .name = "NCCL ring allreduce, one ring per channel",
       .description = "k channels, each a ring allreduce over all ranks on n/k, leaving every host through its own "
                      "NIC: 2(p-1) steps per chunk round, 2(p-1)/p n bytes per rank",
       .collective = ar, .runtimes = kColltuneOnly, .nccl_ring_channels = true, .summation_depth = ring_depth,
       .not_applicable = nccl_ring_not_applicable, .schedule = generate_nccl_ring, .cost = cost_nccl_ring},
      {.id = "tree", .name = "binomial tree allreduce",
       .description = "pipelined binomial reduce to rank 0 + binomial broadcast: R+lg p-1 steps each, root moves lg p n "
                      "each way",
       .collective = ar, .runtimes = kColltuneOnly, .summation_depth = log_depth, .not_applicable = always,
       .schedule = stored<build_tree>, .cost = cost_tree},
      {.id = "dbtree", .name = "double binary tree allreduce",
       .description = "two binary trees (NCCL 2.4), each reduces+broadcasts half the data, pipelined: R+2H-1 steps, ~n "
                      "bytes each way per rank",
       .collective = ar, .nccl_name = "tree", .runtimes = kNcclToo, .summation_depth = dbtree_depth,
       .not_applicable = always, .schedule = generate_dbtree, .pipeline_pieces = dbtree_pipeline_pieces},
      {.id = "rhd", .name = "recursive halving-doubling allreduce",
       .description = "Rabenseifner: halving reduce-scatter + doubling allgather, 2 lg p steps, 2(p-1)/p n bytes; extra "
                      "ranks fold in first",
       .collective = ar, .runtimes = kColltuneOnly, .summation_depth = log_depth, .not_applicable = always,
       .schedule = generate_rhd, .cost = cost_rhd},
      {.id = "rhd_near", .name = "recursive halving-doubling allreduce, nearest partner first",
       .description = "rhd with the distances reversed (SimGrid's rab_rdb): halving starts with the neighbour, so the "
                      "largest exchanges stay inside hosts and leaves",
       .collective = ar, .runtimes = kColltuneOnly, .summation_depth = log_depth, .not_applicable = always,
       .schedule = generate_rhd_near, .cost = cost_rhd_near},
      {.id = "hierarchical", .name = "hierarchical allreduce (Horovod)",
       .description = "ring reduce-scatter in each host, inner allreduce of each n/L shard across hosts, ring allgather "
                      "in each host",
       .collective = ar, .placement = Placement::per_host, .runtimes = kHorovodToo,
       .summation_depth = hierarchical_depth, .not_applicable = hierarchical_not_applicable,
       .schedule = stored<build_hierarchical>, .cost = cost_hierarchical},
      {.id = "hierarchical_leader", .name = "hierarchical allreduce with one leader per host",
       .description = "binomial reduce to each host's leader, inner allreduce of n among leaders, binomial broadcast in "
                      "each host",
       .collective = ar, .placement = Placement::per_host, .runtimes = kColltuneOnly,
       .summation_depth = hierarchical_leader_depth, .not_applicable = hierarchical_leader_not_applicable,
       .schedule = stored<build_hierarchical_leader>, .cost = cost_hierarchical_leader},
      // colltune's schedule of NCCL's tree (chains, double binary tree across hosts, channels and
      // NICs); like nccl_ring, the tuner's NCCL and Horovod runtimes price NCCL's tree with NCCL's
      // own model under `dbtree` (NCCL name "tree").
      {.id = "nccl_tree", .name = "NCCL tree allreduce, chains in hosts and a double binary tree across",
       .description = "2k channels on n/2k each: a chain in every host, NCCL's double binary tree across hosts, reduce "
                      "up and broadcast down pipelined: R+2H-1 steps, ~2n bytes each way per rank",
       .collective = ar, .runtimes = kColltuneOnly, .nccl_tree_channels = true, .summation_depth = nccl_tree_depth,
       .not_applicable = nccl_tree_not_applicable, .schedule = generate_nccl_tree,
       .pipeline_pieces = nccl_tree_pipeline_pieces},
      // NCCL's NVLS on one host; NCCL's own NVLS is priced by its model (simulate --algo nccl).
      {.id = "nccl_nvls", .name = "NCCL NVLS allreduce on one host, reduced in the NVSwitch",
       .description = "L GPUs + the switch (a helper rank): shards up to the switch, which sums them, sums down to "
                      "every GPU, pipelined: R+1 steps, n bytes each way per GPU",
       .collective = ar, .runtimes = kColltuneOnly, .in_switch = true, .summation_depth = one_depth,
       .not_applicable = nccl_nvls_not_applicable, .schedule = stored<build_nccl_nvls>,
       .pipeline_pieces = nccl_nvls_pipeline_pieces},
      // NCCL's NVLS_TREE across hosts; NCCL's own is priced by its model (--nccl-algo NVLS_TREE).
      {.id = "nccl_nvls_tree", .name = "NCCL NVLS-Tree allreduce: NVSwitch sums in hosts, double binary tree across",
       .description = "H hosts of L GPUs + H NVSwitches (helpers): switch sums, 2L segments on NCCL's double binary "
                      "tree across hosts (GPU g heads 2 of them), switch writes the sums back: R+2T+3 steps",
       .collective = ar, .runtimes = kColltuneOnly, .in_switch = true, .summation_depth = nccl_nvls_tree_depth,
       .not_applicable = nccl_nvls_tree_not_applicable, .schedule = generate_nccl_nvls_tree,
       .pipeline_pieces = nccl_nvls_tree_pipeline_pieces},
      // NCCL's COLLNET_DIRECT with SHARP; NCCL's own is priced by its model (--nccl-algo COLLNET_DIRECT).
      {.id = "nccl_collnet", .name = "NCCL CollNet Direct allreduce: heads sum in hosts, the SHARP switch across",
       .description = "H hosts of L GPUs + the network switch (a helper): shard g reduced at GPU g, summed in the "
                      "switch, broadcast from GPU g: R+3 steps, n each way per host over its NICs (tree: 2n)",
       .collective = ar, .runtimes = kColltuneOnly, .in_switch = true, .in_network_switch = true,
       .summation_depth = nccl_collnet_depth, .not_applicable = nccl_collnet_not_applicable,
       .schedule = stored<build_nccl_collnet>},
      {.id = "ps", .name = "parameter server (push shards, servers sum, pull)",
       .description = "S shards on S servers (dedicated helper ranks or colocated): push + pull, R+1 steps; a worker "
                      "moves n each way, a server 2Wn/S",
       .collective = ar, .runtimes = kPsOnly, .baseline_only = true, .summation_depth = ps_depth,
       .not_applicable = ps_not_applicable, .schedule = stored<build_ps>},
      {.id = "reduce_scatter_ring", .name = "ring reduce-scatter",
       .description = "p-1 steps per chunk round around a ring, rank r ends with segment r: (p-1)/p n bytes per rank",
       .collective = rs, .runtimes = kColltuneOnly, .summation_depth = ring_depth, .not_applicable = always,
       .schedule = generate_reduce_scatter_ring, .cost = cost_reduce_scatter_ring},
      {.id = "reduce_scatter_rh", .name = "recursive halving reduce-scatter",
       .description = "lg p pairwise exchanges of halving blocks, rank r ends with segment r: (p-1)/p n bytes per rank; "
                      "p a power of two",
       .collective = rs, .runtimes = kColltuneOnly, .summation_depth = log_depth, .not_applicable = power_of_two,
       .schedule = generate_reduce_scatter_rh, .cost = cost_reduce_scatter_rh},
      {.id = "allgather_ring", .name = "ring allgather",
       .description = "p-1 steps per chunk round around a ring, rank r starts with segment r: (p-1)/p n bytes per rank",
       .collective = ag, .runtimes = kColltuneOnly, .summation_depth = no_depth, .not_applicable = always,
       .schedule = generate_allgather_ring, .cost = cost_allgather_ring},
      {.id = "allgather_rd", .name = "recursive doubling allgather",
       .description = "lg p pairwise exchanges of doubling blocks, rank r starts with segment r: (p-1)/p n bytes per "
                      "rank; p a power of two",
       .collective = ag, .runtimes = kColltuneOnly, .summation_depth = no_depth, .not_applicable = power_of_two,
       .schedule = generate_allgather_rd, .cost = cost_allgather_rd},
  };
}
#pragma GCC diagnostic pop
// clang-format on

}  // namespace

const std::vector<Algorithm>& algorithms() {
  static const std::vector<Algorithm> table = make_table();
  return table;
}

const Algorithm& find_algorithm(std::string_view id) {
  std::string known;
  for (const Algorithm& a : algorithms()) {
    if (a.id == id) return a;
    known += (known.empty() ? "" : ", ") + a.id;
  }
  throw Error("unknown algorithm '" + std::string(id) + "' (known: " + known + ")");
}

const Algorithm& applicable_algorithm(std::string_view id, const RankLayout& layout, std::size_t count,
                                      const AlgoOptions& options) {
  const Algorithm& a = find_algorithm(id);
  if (layout.nranks() <= 0) throw Error("algorithm '" + a.id + "': the rank layout has no ranks");
  if (auto reason = a.not_applicable(layout, count, options)) {
    throw Error("algorithm '" + a.id + "' is not applicable: " + *reason);
  }
  return a;
}

Schedule build_schedule(std::string_view id, const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  std::unique_ptr<StepSource> source = open_schedule(id, layout, count, options);
  if (auto* held = dynamic_cast<StoredSteps*>(source.get()); held && held->owns()) return held->take();
  return materialize(*source);
}

std::string_view to_string(Placement placement) { return placement == Placement::flat ? "flat" : "per_host"; }

std::string_view to_string(Runtime runtime) {
  switch (runtime) {
    case Runtime::colltune: return "colltune";
    case Runtime::nccl: return "nccl";
    case Runtime::horovod: return "horovod";
    case Runtime::ps: return "ps";
  }
  return "?";
}

Runtime parse_runtime(std::string_view name) {
  for (Runtime r : {Runtime::horovod, Runtime::nccl, Runtime::colltune, Runtime::ps})
    if (to_string(r) == name) return r;
  throw Error("unknown runtime '" + std::string(name) + "' (valid: horovod, nccl, colltune, ps)");
}

}  // namespace colltune::coll
