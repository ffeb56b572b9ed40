// The one table of algorithms. Each entry's description states steps and bytes on the wire;
// the file of each algorithm (src/algorithms/) explains it in full.
#include "colltune/collectives/registry.hpp"

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

std::vector<Algorithm> make_table() {
  using namespace algo;
  const auto ar = Collective::allreduce;
  return {
      {"ring", "ring allreduce",
       "reduce-scatter + allgather around a ring, chunk-pipelined: 2(p-1) steps per chunk round, 2(p-1)/p n bytes per rank",
       ar, always, build_ring, cost_ring, generate_ring, nullptr},
      {"tree", "binomial tree allreduce",
       "pipelined binomial reduce to rank 0 + binomial broadcast: R+lg p-1 steps each, root moves lg p n each way", ar,
       always, build_tree, cost_tree, nullptr, nullptr},
      {"dbtree", "double binary tree allreduce",
       "two binary trees (NCCL 2.4), each reduces+broadcasts half the data, pipelined: R+2H-1 steps, ~n bytes each way per rank",
       ar, always, build_dbtree, nullptr, nullptr, dbtree_pipeline_pieces},
      {"rhd", "recursive halving-doubling allreduce",
       "Rabenseifner: halving reduce-scatter + doubling allgather, 2 lg p steps, 2(p-1)/p n bytes; extra ranks fold in first",
       ar, always, build_rhd, cost_rhd, nullptr, nullptr},
      {"hierarchical", "hierarchical allreduce (Horovod)",
       "ring reduce-scatter in each host, inner allreduce of each n/L shard across hosts, ring allgather in each host",
       ar, hierarchical_not_applicable, build_hierarchical, cost_hierarchical, nullptr, nullptr},
      {"hierarchical_leader", "hierarchical allreduce with one leader per host",
       "binomial reduce to each host's leader, inner allreduce of n among leaders, binomial broadcast in each host", ar,
       hierarchical_leader_not_applicable, build_hierarchical_leader, cost_hierarchical_leader, nullptr,
       nullptr},
      {"reduce_scatter_ring", "ring reduce-scatter",
       "p-1 steps per chunk round around a ring, rank r ends with segment r: (p-1)/p n bytes per rank",
       Collective::reduce_scatter, always, build_reduce_scatter_ring, cost_reduce_scatter_ring,
       generate_reduce_scatter_ring, nullptr},
      {"reduce_scatter_rh", "recursive halving reduce-scatter",
       "lg p pairwise exchanges of halving blocks, rank r ends with segment r: (p-1)/p n bytes per rank; p a power of two",
       Collective::reduce_scatter, power_of_two, build_reduce_scatter_rh, cost_reduce_scatter_rh, nullptr, nullptr},
      {"allgather_ring", "ring allgather",
       "p-1 steps per chunk round around a ring, rank r starts with segment r: (p-1)/p n bytes per rank",
       Collective::allgather, always, build_allgather_ring, cost_allgather_ring, generate_allgather_ring, nullptr},
      {"allgather_rd", "recursive doubling allgather",
       "lg p pairwise exchanges of doubling blocks, rank r starts with segment r: (p-1)/p n bytes per rank; p a power of two",
       Collective::allgather, power_of_two, build_allgather_rd, cost_allgather_rd, nullptr, nullptr},
  };
}

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
  return applicable_algorithm(id, layout, count, options).build(layout, count, options);
}

}  // namespace colltune::coll
