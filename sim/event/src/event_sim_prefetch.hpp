#pragma once
// Routes found ahead of the event queue, on a second thread (event_sim_prefetch.cpp).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "colltune/collectives/step_source.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim::detail {

// An unfolded run on many ranks meets a new pair of ranks at nearly every transfer (rhd on
// 16,384 ranks: 229,000 pairs in its halving steps), and finding a pair's route (its NICs by
// NCCL's rule, the legs through them) is a third of such a run. The routes depend on the
// schedule and the machine only, not on time: a second thread walks the schedule step by step
// ahead of the event queue, from step 1 (every rank's first step starts at once, and the queue
// asks for those routes as soon as the thread would), and finds the route of each send to a
// pair (sender, receiver, op channel) not met in an earlier step (Topology::route: the same
// cached Path whichever thread asks first). It stops at the first step that meets no new pair
// (a ring's second step, rhd's first doubling step): from there on the pairs come back, and the
// queue finds their routes cached. The queue takes a step's new routes once the thread has done
// the whole step, and asks the topology for any other itself. The thread holds the route
// cache's lock while it searches; the queue, which takes its routes from here, rarely waits on
// it. Results do not depend on which thread found a route.
class RoutePrefetch {
 public:
  // Starts the thread. `source` and `topology` must outlive this object; source.ops() is called
  // from the thread (StepSource: const calls may run at once).
  RoutePrefetch(const coll::StepSource& source, const topo::Topology& topology);
  ~RoutePrefetch();  // stops the thread and waits for it
  RoutePrefetch(const RoutePrefetch&) = delete;
  RoutePrefetch& operator=(const RoutePrefetch&) = delete;

  // The route of the send src -> dst on op channel `op_channel` in src's step `step`, where the
  // thread has done that step and the pair was new there; nullptr otherwise (ask the topology).
  const topo::Path* find(int src, std::size_t step, int dst, std::uint16_t op_channel) const;
  // Tells the thread to stop after the rank it is at (the run needs no more routes).
  void stop() { stop_.store(true, std::memory_order_relaxed); }

  // Whether a run of this source is worth the thread: enough ranks and a core to spare.
  static bool worth_it(const coll::StepSource& source);

 private:
  struct Route {  // a send's new pair
    int src = 0;
    int dst = 0;
    std::uint16_t op_channel = 0;
    const topo::Path* path = nullptr;
  };
  void work();
  // Whether src's sends have met (dst, op_channel) before; records it if not.
  bool met(int src, int dst, std::uint16_t op_channel);

  const coll::StepSource& source_;
  const topo::Topology& topology_;
  // By step: the new pairs' routes, by sender. Sized before the thread starts (never
  // reallocated); a step is read only once ready_ has passed it.
  std::vector<std::vector<Route>> steps_;
  std::atomic<std::size_t> ready_{1};  // steps_[1, ready_) are done (release/acquire)
  std::atomic<bool> stop_{false};
  // The thread's own: by sender, the (receiver, op channel) pairs met so far, in order.
  std::vector<std::vector<std::pair<int, std::uint16_t>>> met_;
  std::thread thread_;
};

}  // namespace colltune::sim::detail
