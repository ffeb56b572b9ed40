// Parameter-server allreduce (Li et al., OSDI'14; TensorFlow's and MXNet's kvstore "dist"
// data parallelism), as one schedule over workers and servers.
//
// The buffer of n elements is cut into S balanced shards (segment_of); shard s lives on server
// s. Each shard is cut into pipeline chunks of chunk_elems (0: one chunk), R chunks in the
// largest shard; in time step t = 0..R:
//  - push: every worker sends chunk t of every shard s to server s, which sums them;
//  - pull: server s sends chunk t-1 of its shard, now the sum of every worker's, to every worker,
//    which copies it (a worker receives the parameters the server updated).
// Servers are
//  - dedicated (options.ps_servers = S > 0, not colocated): the layout's last S ranks, helpers
//    (Schedule::helpers) whose input does not count. A server copies worker 0's chunk and
//    reduces workers 1..W-1's into it, in that op order within the step (schedule.hpp).
//    Bytes per rank: a worker sends n and receives n; server s receives W n/S and sends W n/S,
//    so one server's NIC carries 2 W n / S, the bottleneck when S < W (BytePS, OSDI'20).
//  - colocated (ps_colocated, or ps_servers = 0: one per host): server s is the first rank of
//    host s and is a worker too; its own shard is already in its buffer, so it reduces the
//    other W-1 workers' chunks and sends the sum to them. Bytes per rank: a worker that hosts
//    no server sends and receives n; one hosting shard s sends and receives n - n/S as a worker
//    plus (W-1) n/S as a server.
// Steps: R + 1 for every rank that moves data (one when R = 1: push, then pull).
#include <string>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::algo {

std::optional<std::string> ps_not_applicable(const RankLayout& layout, std::size_t /*count*/,
                                             const AlgoOptions& options) {
  const int s = options.ps_servers;
  if (s < 0) return "needs a server count of at least 1 (got " + std::to_string(s) + ")";
  if (s == 0) return std::nullopt;  // one colocated server per host
  if (options.ps_colocated && s > layout.nhosts()) {
    return "colocated servers live one per host: " + std::to_string(s) + " servers need " + std::to_string(s) +
           " hosts, the layout has " + std::to_string(layout.nhosts());
  }
  if (!options.ps_colocated && s >= layout.nranks()) {
    return "dedicated servers are the layout's last ranks: " + std::to_string(s) + " servers leave no worker among " +
           std::to_string(layout.nranks()) + " ranks";
  }
  return std::nullopt;
}

PsPlan ps_plan(const RankLayout& layout, const AlgoOptions& options) {
  if (auto reason = ps_not_applicable(layout, 0, options)) throw Error("algorithm 'ps': " + *reason);
  PsPlan plan;
  plan.dedicated = options.ps_servers > 0 && !options.ps_colocated;
  if (plan.dedicated) {
    plan.workers = layout.nranks() - options.ps_servers;
    for (int s = 0; s < options.ps_servers; ++s) plan.servers.push_back(plan.workers + s);
    return plan;
  }
  plan.workers = layout.nranks();
  const int servers = options.ps_servers == 0 ? layout.nhosts() : options.ps_servers;
  for (int s = 0; s < servers; ++s) plan.servers.push_back(layout.ranks_on_host(s).front());
  return plan;
}

namespace {

// Time step t's pushes of chunk t of `shard` to its server, worker 0 first: a dedicated server
// copies the first contribution and reduces the others into it (in op order).
void push(ScheduleBuilder& b, const PsPlan& plan, int server, const Block& chunk, int t) {
  bool first = plan.dedicated;
  for (int w = 0; w < plan.workers; ++w) {
    if (w == server) continue;
    b.message(t, w, server, chunk, /*reduce=*/!first);
    first = false;
  }
}

// Time step t's pull of a summed chunk: the server sends it to every other worker.
void pull(ScheduleBuilder& b, const PsPlan& plan, int server, const Block& chunk, int t) {
  for (int w = 0; w < plan.workers; ++w) {
    if (w != server) b.message(t, server, w, chunk, /*reduce=*/false);
  }
}

}  // namespace

Schedule build_ps(const RankLayout& layout, std::size_t count, const AlgoOptions& options) {
  const PsPlan plan = ps_plan(layout, options);
  ScheduleBuilder b("ps", Collective::allreduce, layout.nranks(), count);
  if (plan.dedicated) b.set_helpers(static_cast<int>(plan.servers.size()));
  const std::size_t shards = plan.servers.size();
  const std::size_t rounds = chunk_count(segment_of(0, shards, count).count, options.chunk_elems);
  for (std::size_t t = 0; t <= rounds; ++t) {
    for (std::size_t s = 0; s < shards; ++s) {
      const Block shard = segment_of(s, shards, count);
      const int server = plan.servers[s];
      if (t < rounds) push(b, plan, server, chunk_of(shard, t, options.chunk_elems), static_cast<int>(t));
      if (t > 0) pull(b, plan, server, chunk_of(shard, t - 1, options.chunk_elems), static_cast<int>(t));
    }
  }
  return b.finish();
}

int ps_depth(const RankLayout& layout, const AlgoOptions& options) {
  if (ps_not_applicable(layout, 0, options)) return 0;
  return std::max(ps_plan(layout, options).workers - 1, 0);
}

}  // namespace colltune::coll::algo
