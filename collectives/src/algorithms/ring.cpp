// Ring allreduce = ring reduce-scatter + ring allgather (Patarasuk & Yuan; NCCL's ring).
//
// p ranks in rank order on a ring; the buffer of n elements is cut into p balanced segments
// (segment_of). Reduce-scatter: in step k = 0..p-2 rank r sends segment (r-k-1) mod p to rank
// r+1, which reduces it into its own copy; after p-1 steps rank r holds the reduction of
// segment r. Allgather: in step k rank r sends segment (r-k) mod p to r+1, which copies it.
// Pipelining: every segment is cut into chunks of chunk_elems; round j runs the reduce-scatter
// and then the allgather on chunk j of every segment, so R = ceil(ceil(n/p) / chunk) rounds of
// 2(p-1) steps. Empty chunks (n < p, short last chunks) are not sent.
// Bytes on the wire per rank: 2 (p-1)/p n (each rank sends p-1 segments in each phase).
// Cost (max segment s = ceil(n/p), chunk c): per round (p-1)(a + c b + c g) + (p-1)(a + c b);
// with one chunk this is the textbook 2(p-1)a + 2(p-1)/p n b + (p-1)/p n g.
#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/collectives/step_source.hpp"

namespace colltune::coll::algo {

std::vector<int> all_ranks(int nranks) {
  std::vector<int> g(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) g[static_cast<std::size_t>(r)] = r;
  return g;
}

double ring_phase_cost(const RankLayout& layout, const std::vector<int>& group, std::size_t count,
                       std::size_t elem_size, std::size_t chunk_elems, bool reduce, const LevelCosts& costs) {
  const std::size_t q = group.size();
  if (q < 2 || count == 0) return 0;
  Levels levels(costs);
  for (std::size_t i = 0; i < q; ++i) levels.add(layout, group[i], group[(i + 1) % q]);
  // Every step of round j moves chunk j of the largest segment on the critical path.
  const Block largest = segment_of(0, q, count);
  const std::size_t rounds = chunk_count(largest.count, chunk_elems);
  auto round_cost = [&](std::size_t elems) {
    const double bytes = static_cast<double>(elems * elem_size);
    return static_cast<double>(q - 1) *
           (message_time(levels, bytes, costs) + (reduce ? bytes * costs.gamma_us_per_byte : 0.0));
  };
  const std::size_t full = chunk_of(largest, 0, chunk_elems).count;
  const std::size_t last = chunk_of(largest, rounds - 1, chunk_elems).count;
  return static_cast<double>(rounds - 1) * round_cost(full) + round_cost(last);
}

double cost_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size, const AlgoOptions& options,
                 const LevelCosts& costs) {
  const std::size_t count = elements_of(bytes, elem_size);
  const std::vector<int> group = all_ranks(layout.nranks());
  return ring_phase_cost(layout, group, count, elem_size, options.chunk_elems, true, costs) +
         ring_phase_cost(layout, group, count, elem_size, options.chunk_elems, false, costs);
}


// Reduce-scatter on its own: the first half of the ring allreduce. Rank r ends with segment r.
// Steps R (p-1); bytes per rank (p-1)/p n; cost R rounds of (p-1)(a + c b + c g).
double cost_reduce_scatter_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                const AlgoOptions& options, const LevelCosts& costs) {
  return ring_phase_cost(layout, all_ranks(layout.nranks()), elements_of(bytes, elem_size), elem_size,
                         options.chunk_elems, true, costs);
}

// Allgather on its own: rank r starts with segment r; the second half of the ring allreduce.
// Steps R (p-1); bytes per rank (p-1)/p n; cost R rounds of (p-1)(a + c b).
double cost_allgather_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                           const AlgoOptions& options, const LevelCosts& costs) {
  return ring_phase_cost(layout, all_ranks(layout.nranks()), elements_of(bytes, elem_size), elem_size,
                         options.chunk_elems, false, costs);
}

}  // namespace colltune::coll::algo
