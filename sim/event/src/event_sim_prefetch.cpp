#include "event_sim_prefetch.hpp"

#include <algorithm>

namespace colltune::sim::detail {

namespace {
// Where the routes are worth a second core: on 16,384 ranks they are a third of a one-second
// run, on 2,048 some tens of milliseconds; below that a run is short, and the tuner runs many
// of them on its own threads at once.
constexpr int kPrefetchRanks = 2048;
}  // namespace

bool RoutePrefetch::worth_it(const coll::StepSource& source) {
  return source.header().nranks >= kPrefetchRanks && std::thread::hardware_concurrency() >= 2;
}

RoutePrefetch::RoutePrefetch(const coll::StepSource& source, const topo::Topology& topology)
    : source_(source), topology_(topology) {
  std::size_t steps = 0;
  for (int r = 0; r < source.header().nranks; ++r) steps = std::max(steps, source.num_steps(r));
  steps_.resize(steps);
  met_.resize(static_cast<std::size_t>(source.header().nranks));
  thread_ = std::thread([this] { work(); });
}

RoutePrefetch::~RoutePrefetch() {
  stop();
  thread_.join();
}

bool RoutePrefetch::met(int src, int dst, std::uint16_t op_channel) {
  auto& pairs = met_[static_cast<std::size_t>(src)];  // sorted, as the engine's table of peers
  const std::pair<int, std::uint16_t> pair{dst, op_channel};
  const auto it = std::lower_bound(pairs.begin(), pairs.end(), pair);
  if (it != pairs.end() && *it == pair) return true;
  pairs.insert(it, pair);
  return false;
}

// Every rank's sends of each step in turn from step 1 (step 0's pairs recorded first), the new
// pairs routed. A send the engine would refuse (a peer out of range or itself) or a route the
// topology cannot find ends the walk: the engine meets the same schedule and topology itself and
// reports them.
void RoutePrefetch::work() {
  const int n = source_.header().nranks;
  std::vector<coll::Op> scratch;
  const auto sends = [&](int r, std::size_t s, auto visit) {
    if (s >= source_.num_steps(r)) return true;
    for (const coll::Op& op : source_.ops(r, s, scratch)) {
      if (op.kind != coll::OpKind::send) continue;
      if (op.peer < 0 || op.peer >= n || op.peer == r) return false;
      if (!met(r, op.peer, op.channel)) visit(op);
    }
    return true;
  };
  try {
    for (int r = 0; r < n; ++r)
      if (!sends(r, 0, [](const coll::Op&) {})) return;
    for (std::size_t s = 1; s < steps_.size(); ++s) {
      std::vector<Route>& routes = steps_[s];
      for (int r = 0; r < n; ++r) {
        if (stop_.load(std::memory_order_relaxed)) return;
        const bool ok = sends(r, s, [&](const coll::Op& op) {
          routes.push_back({r, op.peer, op.channel, &topology_.route(r, op.peer, op.channel)});
        });
        if (!ok) return;
      }
      if (routes.empty()) return;  // the pairs come back from here
      ready_.store(s + 1, std::memory_order_release);
    }
  } catch (...) {
    // As above: the engine finds the same failure on its own thread.
  }
}

const topo::Path* RoutePrefetch::find(int src, std::size_t step, int dst, std::uint16_t op_channel) const {
  if (step == 0 || step >= ready_.load(std::memory_order_acquire)) return nullptr;
  const std::vector<Route>& routes = steps_[step];
  auto it = std::lower_bound(routes.begin(), routes.end(), src, [](const Route& r, int s) { return r.src < s; });
  for (; it != routes.end() && it->src == src; ++it)
    if (it->dst == dst && it->op_channel == op_channel) return it->path;
  return nullptr;
}

}  // namespace colltune::sim::detail
