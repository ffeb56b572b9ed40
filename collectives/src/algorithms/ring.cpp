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
// Fewer elements than ranks (n < p): only n segments, of one element each, travel, side by side,
// so a step moves n messages, not p, and a rank whose segments are empty skips the step. The
// slowest link then does not delay every step: the per-step formula above, which charges it at
// every step, is only an upper bound (1.8x the priced schedule on 64 hosts of 8 GPUs at 1 KiB),
// and sparse_ring_cost prices those steps one by one instead (below).
#include <algorithm>
#include <optional>
#include <vector>

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

namespace {

// Most (step, message) pairs sparse_ring_cost walks: 2^24 is 4,096 ranks at 2,048 elements, tens
// of milliseconds. Past it the per-step formula's upper bound stands.
constexpr std::size_t kSparseRingMessages = std::size_t{1} << 24;

// Time of one message of `bytes` from rank a to rank b when it has every port it passes to
// itself: alpha + bytes at the slowest of its ports' rates (its level's, its hosts' NICs, its
// groups' trunks), as the reference pricer charges it (sim/pricer.hpp).
double lone_message_us(const RankLayout& layout, int a, int b, double bytes, const LevelCosts& costs) {
  const int from = layout.host_of(a), to = layout.host_of(b);
  if (from == to) return costs.alpha_intra_us + bytes * costs.beta_intra_us_per_byte;
  const auto& g = costs.host_group;
  const bool across_groups = !g.empty() && g[static_cast<std::size_t>(from)] != g[static_cast<std::size_t>(to)];
  return inter_alpha_us(costs, from, to) + bytes * inter_beta(costs, 1, across_groups ? 1 : 0);
}

// The ring over `group` with count < q elements (q members), priced step by step as the
// reference pricer runs its schedule; nullopt where that is not exact or too long
// (kSparseRingMessages).
//
// Segment s (s < count, one element; the others are empty) is sent in step k of the
// reduce-scatter by member s + k + 1 and of the allgather by member s + k (ring_send_segment),
// so step k's messages cross the count consecutive edges from member k + 1 (k) on, and touch
// count + 1 members: the first only sends, the last only receives, the others do both. A member's
// step begins when its previous non-empty step ends; a message begins when both its members have
// begun the step (rendezvous) and arrives lone_message_us later; a step ends at the later of its
// send's arrival and its receive's arrival plus the reduction (reduce-scatter). Exact where no
// two messages can share a port: each member sends and receives one message a step and waits for
// both, so that holds when the ring leaves and enters every host (and network group) at most
// once, as a ring in rank order over hosts of consecutive ranks does. O(phases q count).
std::optional<double> sparse_ring_cost(const RankLayout& layout, const std::vector<int>& group, std::size_t count,
                                       std::size_t elem_size, bool reduce_scatter, bool allgather,
                                       const LevelCosts& costs) {
  const std::size_t q = group.size();
  const std::size_t phases = (reduce_scatter ? 1 : 0) + (allgather ? 1 : 0);
  if (q < 2 || count == 0 || count >= q || phases * (q - 1) * count > kSparseRingMessages) return std::nullopt;
  Levels levels(costs);
  for (std::size_t i = 0; i < q; ++i) levels.add(layout, group[i], group[(i + 1) % q]);
  if (levels.crossing_per_host() > 1 || levels.crossing_per_group() > 1) return std::nullopt;
  const double bytes = static_cast<double>(elem_size);
  std::vector<double> edge(q);  // edge i: member i to member i + 1
  for (std::size_t i = 0; i < q; ++i) edge[i] = lone_message_us(layout, group[i], group[(i + 1) % q], bytes, costs);
  const auto next = [q](std::size_t i) { return i + 1 == q ? 0 : i + 1; };
  std::vector<double> start(q, 0.0);    // when each member's next step may begin
  std::vector<double> arrival(q, 0.0);  // this step's message on edge i
  const auto run_phase = [&](bool reduce) {
    const double reduction = reduce ? bytes * costs.gamma_us_per_byte : 0.0;
    for (std::size_t k = 0; k + 1 < q; ++k) {
      const std::size_t first = (reduce ? k + 1 : k) % q;  // the member that sends segment 0
      for (std::size_t s = 0, i = first; s < count; ++s, i = next(i))
        arrival[i] = std::max(start[i], start[next(i)]) + edge[i];
      start[first] = arrival[first];
      for (std::size_t s = 1, i = next(first), prev = first; s <= count; ++s, prev = i, i = next(i))
        start[i] = s < count ? std::max(arrival[i], arrival[prev] + reduction) : arrival[prev] + reduction;
    }
  };
  if (reduce_scatter) run_phase(true);
  if (allgather) run_phase(false);
  return *std::max_element(start.begin(), start.end());
}

// The whole ring: step by step where that is exact (count < q), else per round.
double ring_cost(const RankLayout& layout, std::size_t bytes, std::size_t elem_size, std::size_t chunk_elems,
                 bool reduce_scatter, bool allgather, const LevelCosts& costs) {
  const std::size_t count = elements_of(bytes, elem_size);
  const std::vector<int> group = all_ranks(layout.nranks());
  if (auto sparse = sparse_ring_cost(layout, group, count, elem_size, reduce_scatter, allgather, costs)) return *sparse;
  return (reduce_scatter ? ring_phase_cost(layout, group, count, elem_size, chunk_elems, true, costs) : 0.0) +
         (allgather ? ring_phase_cost(layout, group, count, elem_size, chunk_elems, false, costs) : 0.0);
}

}  // namespace

double cost_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size, const AlgoOptions& options,
                 const LevelCosts& costs) {
  return ring_cost(layout, bytes, elem_size, options.chunk_elems, true, true, costs);
}

// Reduce-scatter on its own: the first half of the ring allreduce. Rank r ends with segment r.
// Steps R (p-1); bytes per rank (p-1)/p n; cost R rounds of (p-1)(a + c b + c g).
double cost_reduce_scatter_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                                const AlgoOptions& options, const LevelCosts& costs) {
  return ring_cost(layout, bytes, elem_size, options.chunk_elems, true, false, costs);
}

// Allgather on its own: rank r starts with segment r; the second half of the ring allreduce.
// Steps R (p-1); bytes per rank (p-1)/p n; cost R rounds of (p-1)(a + c b).
double cost_allgather_ring(const RankLayout& layout, std::size_t bytes, std::size_t elem_size,
                           const AlgoOptions& options, const LevelCosts& costs) {
  return ring_cost(layout, bytes, elem_size, options.chunk_elems, false, true, costs);
}

}  // namespace colltune::coll::algo
