// Hierarchical allreduce, two flavours.
//
// "hierarchical" (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE, here with a ring inside hosts):
// H hosts with L ranks each, n elements.
//  1. ring reduce-scatter inside every host: local rank i ends with segment i of L
//     (L-1 steps per chunk round, (L-1)/L n bytes per rank on intra-host links);
//  2. the L ranks with the same local index, one per host, allreduce their segment with the
//     inner algorithm (ring, rhd, tree or dbtree): n/L elements across hosts, e.g. with ring
//     2 (H-1)/H n/L bytes per rank on inter-host links;
//  3. ring allgather inside every host ((L-1)/L n bytes per rank, intra-host).
// Hosts must hold the same number of ranks (the shards are cut by the local rank count);
// otherwise the algorithm is not applicable and "hierarchical_leader" is the answer.
// Cost: ring reduce-scatter(L, intra) + inner(H hosts, n/L) + ring allgather(L, intra).
//
// "hierarchical_leader": any hosts. 1. pipelined binomial reduce to local rank 0 inside every
// host (n per non-leader rank up, lg L n into the leader); 2. the leaders allreduce all n
// elements with the inner algorithm; 3. pipelined binomial broadcast inside every host.
// Cost: max over hosts of the binomial reduce + inner(H hosts, n) + max over hosts of the
// broadcast.
#include <algorithm>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"

namespace colltune::coll::algo {
namespace {

const char* const kInner[] = {"ring", "rhd", "tree", "dbtree"};

std::optional<std::string> check_inner(const AlgoOptions& options) {
  for (const char* id : kInner) {
    if (options.inner == id) return std::nullopt;
  }
  return "inner algorithm '" + options.inner + "' is not one of ring, rhd, tree, dbtree";
}

// One rank per host: what the inner algorithm sees across hosts.
RankLayout hosts_layout(int hosts) {
  std::vector<int> host_of(static_cast<std::size_t>(hosts));
  for (int h = 0; h < hosts; ++h) host_of[static_cast<std::size_t>(h)] = h;
  return RankLayout(std::move(host_of));
}

// The rank with local index i on every host.
std::vector<int> column(const RankLayout& layout, int i) {
  std::vector<int> g;
  for (int h = 0; h < layout.nhosts(); ++h) g.push_back(layout.ranks_on_host(h)[static_cast<std::size_t>(i)]);
  return g;
}

// The inner algorithm across hosts: its closed form, else its priced schedule when the costs
// can price one (LevelCosts::price), else nullopt. `copies` instances run at once, one per local
// rank, on every host: they share each host's NICs.
std::optional<double> inner_cost(const RankLayout& layout, std::size_t elems, std::size_t elem_size,
                                 const AlgoOptions& options, const LevelCosts& host_costs, int copies) {
  const Algorithm& inner = find_algorithm(options.inner);
  const RankLayout across = hosts_layout(layout.nhosts());
  LevelCosts costs = host_costs;
  costs.beta_host_us_per_byte *= copies;
  costs.beta_group_us_per_byte *= copies;  // and its group's trunk
  if (inner.cost) {
    if (const std::optional<double> t = inner.cost(across, elems * elem_size, elem_size, options, costs)) return t;
  }
  if (costs.price) return costs.price(inner, across, elems * elem_size, elem_size, options, costs);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> hierarchical_not_applicable(const RankLayout& layout, std::size_t /*count*/,
                                                       const AlgoOptions& options) {
  if (auto bad = check_inner(options)) return bad;
  if (!layout.is_uniform()) {
    return "hosts hold different numbers of ranks (" + std::to_string(layout.min_ranks_per_host()) + " to " +
           std::to_string(layout.max_ranks_per_host()) + "); use hierarchical_leader";
  }
  return std::nullopt;
}

// One ring per host over the host's ranks, all running at once on the whole buffer (the
// reduce-scatter or the allgather phase of the hierarchical allreduce).
Schedule host_rings(const RankLayout& layout, std::size_t count, std::size_t chunk_elems, RingShape shape) {
  std::vector<RingSpec> rings;
  for (int h = 0; h < layout.nhosts(); ++h) rings.push_back(RingSpec{layout.ranks_on_host(h), Block{0, count}, 0});
  return materialize(*generate_rings(ScheduleHeader{"hierarchical", Collective::allreduce, layout.nranks(), count, {}},
                                     std::move(rings), chunk_elems, shape));
}

Schedule build_hierarchical(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  const int local = layout.max_ranks_per_host();
  ScheduleBuilder b("hierarchical", Collective::allreduce, layout.nranks(), count);
  const std::vector<int> everyone = all_ranks(layout.nranks());
  b.append(host_rings(layout, count, options.chunk_elems, RingShape::reduce_scatter), everyone, 0);
  if (layout.nhosts() > 1) {
    const Algorithm& inner = find_algorithm(options.inner);
    for (int i = 0; i < local; ++i) {
      const Block shard = segment_of(static_cast<std::size_t>(i), static_cast<std::size_t>(local), count);
      if (shard.count == 0) continue;
      b.append(materialize(*inner.schedule(hosts_layout(layout.nhosts()), shard.count, options)), column(layout, i),
               shard.offset);
    }
  }
  b.append(host_rings(layout, count, options.chunk_elems, RingShape::allgather), everyone, 0);
  return b.finish();
}

std::optional<double> cost_hierarchical(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                        const AlgoOptions& options, const LevelCosts& costs) {
  const std::size_t count = elements_of(bytes, elem_size);
  const std::vector<int>& host0 = layout.ranks_on_host(0);
  const std::size_t shard = segment_of(0, host0.size(), count).count;
  double t = ring_phase_cost(layout, host0, count, elem_size, options.chunk_elems, true, costs) +
             ring_phase_cost(layout, host0, count, elem_size, options.chunk_elems, false, costs);
  if (layout.nhosts() > 1 && shard > 0) {
    const std::optional<double> across = inner_cost(layout, shard, elem_size, options, costs, static_cast<int>(host0.size()));
    if (!across) return std::nullopt;
    t += *across;
  }
  return t;
}

std::optional<std::string> hierarchical_leader_not_applicable(const RankLayout& /*layout*/, std::size_t /*count*/,
                                                              const AlgoOptions& options) {
  return check_inner(options);
}

Schedule build_hierarchical_leader(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  ScheduleBuilder b("hierarchical_leader", Collective::allreduce, layout.nranks(), count);
  for (int h = 0; h < layout.nhosts(); ++h) binomial_reduce(b, layout.ranks_on_host(h), Block{0, count}, options.chunk_elems);
  if (layout.nhosts() > 1 && count > 0) {
    b.append(materialize(*find_algorithm(options.inner).schedule(hosts_layout(layout.nhosts()), count, options)),
             column(layout, 0), 0);
  }
  b.begin_phase();
  for (int h = 0; h < layout.nhosts(); ++h) {
    binomial_broadcast(b, layout.ranks_on_host(h), Block{0, count}, options.chunk_elems);
  }
  return b.finish();
}

std::optional<double> cost_hierarchical_leader(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                               const AlgoOptions& options, const LevelCosts& costs) {
  const std::size_t count = elements_of(bytes, elem_size);
  double up = 0;
  double down = 0;
  for (int h = 0; h < layout.nhosts(); ++h) {
    const std::vector<int>& g = layout.ranks_on_host(h);
    up = std::max(up, binomial_phase_cost(layout, g, count, elem_size, options.chunk_elems, true, costs));
    down = std::max(down, binomial_phase_cost(layout, g, count, elem_size, options.chunk_elems, false, costs));
  }
  const std::optional<double> across =
      layout.nhosts() > 1 && count > 0 ? inner_cost(layout, count, elem_size, options, costs, 1) : 0.0;
  if (!across) return std::nullopt;
  return up + *across + down;
}

namespace {
int inner_depth(const RankLayout& layout, const AlgoOptions& options) {
  if (layout.nhosts() < 2) return 0;
  return find_algorithm(options.inner).summation_depth(hosts_layout(layout.nhosts()), options);
}
}  // namespace

int hierarchical_depth(const RankLayout& layout, const AlgoOptions& options) {
  return (layout.max_ranks_per_host() - 1) + inner_depth(layout, options);
}

int hierarchical_leader_depth(const RankLayout& layout, const AlgoOptions& options) {
  return ceil_log2(layout.max_ranks_per_host()) + inner_depth(layout, options);
}

}  // namespace colltune::coll::algo
