// The event simulator's contention-free fast path (and its folding by rotation symmetry) must
// give the event queue's results: every algorithm on several machines, folded and not, with the
// fast path taken where it applies and refused where the run has contention or the machine is
// not symmetric.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

EventSimResult run(const coll::StepSource& source, const topo::Topology& t, bool fast) {
  EventSimOptions o;
  o.fast_path = fast;
  return simulate_schedule(source, t, o);
}

void expect_same(const EventSimResult& fast, const EventSimResult& queue) {
  EXPECT_EQ(queue.fast_path_period, 0);
  EXPECT_NEAR(fast.time_us, queue.time_us, 1e-12 * queue.time_us);
  ASSERT_EQ(fast.rank_finish_us.size(), queue.rank_finish_us.size());
  for (std::size_t r = 0; r < fast.rank_finish_us.size(); ++r)
    EXPECT_NEAR(fast.rank_finish_us[r], queue.rank_finish_us[r], 1e-12 * queue.time_us) << "rank " << r;
  EXPECT_EQ(fast.events, queue.events);
  EXPECT_EQ(fast.flows, queue.flows);
  ASSERT_EQ(fast.links.size(), queue.links.size());
  for (std::size_t i = 0; i < fast.links.size(); ++i) {
    EXPECT_EQ(fast.links[i].link, queue.links[i].link);
    EXPECT_EQ(fast.links[i].bytes, queue.links[i].bytes);
    EXPECT_NEAR(fast.links[i].busy_us, queue.links[i].busy_us, 1e-9 * queue.time_us) << "link " << fast.links[i].link;
  }
}


class FastPath : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(FastPath, GivesTheEventQueuesResults) {
  const auto& [spec, algo] = GetParam();
  const topo::Topology t = topo::load_topology(spec);
  const RankLayout layout = t.rank_layout();
  const int p = layout.nranks();
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(p) * 96, static_cast<std::size_t>(p) * 96 + 5}) {
    for (std::size_t chunk : {std::size_t{0}, std::size_t{32}}) {
      coll::AlgoOptions options;
      options.chunk_elems = chunk;
      const coll::Algorithm& a = coll::find_algorithm(algo);
      if (a.not_applicable(layout, count, options)) continue;
      const auto source = coll::open_schedule(algo, layout, count, options);
      SCOPED_TRACE(spec + " " + algo + " count " + std::to_string(count) + " chunk " + std::to_string(chunk));
      expect_same(run(*source, t, true), run(*source, t, false));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllAlgorithms, FastPath,
    ::testing::Combine(::testing::Values("flat:ranks=7", "flat:ranks=8", "dgx-h100", "dgx-h100:nodes=2",
                                         "fat-tree:nodes=8,gpus=4,nics=4,leaf_ports=8", "torus:dims=4x4", "pcie-box"),
                       ::testing::Values("ring", "tree", "dbtree", "nccl_tree", "rhd", "hierarchical",
                                         "hierarchical_leader", "reduce_scatter_ring", "reduce_scatter_rh",
                                         "allgather_ring", "allgather_rd")));

int period_of(const std::string& spec, const std::string& algo, std::size_t count) {
  const topo::Topology t = topo::load_topology(spec);
  const auto source = coll::open_schedule(algo, t.rank_layout(), count);
  const EventSimResult fast = run(*source, t, true);
  expect_same(fast, run(*source, t, false));
  return fast.fast_path_period;
}

TEST(FastPath, RingOnASymmetricMachineFoldsToFewRanks) {
  EXPECT_EQ(period_of("flat:ranks=64", "ring", 64 * 100), 1);  // every rank alike
  EXPECT_EQ(period_of("flat:ranks=64", "allgather_ring", 64 * 100), 1);
  // A fat-tree repeats per leaf: 4 servers of 4 GPUs under each leaf (8 NIC ports, half up).
  const int d = period_of("fat-tree:nodes=16,gpus=4,nics=4,leaf_ports=8", "ring", 64 * 100);
  EXPECT_GT(d, 0);
  EXPECT_LT(d, 64);
  EXPECT_EQ(64 % d, 0);
}

// Uneven segments leave no symmetry to fold: the sweep by classes takes them (event_sim_classes.cpp).
TEST(FastPath, UnevenSegmentsAreNotFoldedButSweptByClasses) {
  EXPECT_EQ(period_of("flat:ranks=64", "ring", 64 * 100 + 1), 0);
  const topo::Topology t = topo::load_topology("flat:ranks=64");
  const auto source = coll::open_schedule("ring", t.rank_layout(), 64 * 100 + 1);
  EXPECT_GT(run(*source, t, true).class_period, 0);
}

// The sweep by classes against the event queue: late ranks and one larger segment, on machines
// with slack (a fat-tree: exact classes) and without (flat: a staircase of delays, affine classes
// of two or more ranks), few classes each. Exact classes give the queue's times bit for bit.
EventSimResult by_classes(const std::string& spec, std::size_t count, double late, std::size_t chunk = 0) {
  const topo::Topology t = topo::load_topology(spec);
  coll::AlgoOptions options;
  options.chunk_elems = chunk;
  const auto source = coll::open_schedule("ring", t.rank_layout(), count, options);
  EventSimOptions o;
  if (late > 0) {
    o.rank_start_us.assign(static_cast<std::size_t>(t.num_ranks()), 0.0);
    o.rank_start_us[5] = late;
  }
  const EventSimResult classes = simulate_schedule(*source, t, o);
  o.fast_path = false;
  const EventSimResult queue = simulate_schedule(*source, t, o);
  expect_same(classes, queue);
  EXPECT_GT(classes.class_period, 0);
  EXPECT_GT(classes.max_classes, 1u);
  EXPECT_LE(classes.max_classes, 40u);
  return classes;
}

TEST(FastPath, LateRanksAndUnevenSegmentsGoByClasses) {
  const std::string tree = "fat-tree:nodes=32,gpus=4,nics=4,leaf_ports=8,oversub=4";  // 128 ranks
  EXPECT_EQ(by_classes(tree, 128 * 512 + 1, 0).time_us,
            run(*coll::open_schedule("ring", topo::load_topology(tree).rank_layout(), 128 * 512 + 1),
                topo::load_topology(tree), false).time_us);  // exact classes: the same bits
  by_classes(tree, 128 * 512, 5.0);
  by_classes(tree, 128 * 512 + 1, 5.0, 100);
  for (int p : {512, 768}) {  // affine classes: more than max(32, blocks / 64) exact ones
    const std::string flat = "flat:ranks=" + std::to_string(p);
    by_classes(flat, static_cast<std::size_t>(p) * 512 + 1, 0);
    by_classes(flat, static_cast<std::size_t>(p) * 512, 3.0);
  }
}

// Links shared by several channels (nccl_ring's rings share every GPU's NVLink port) are
// contention the sweep by classes does not follow: it gives way to the event queue.
TEST(FastPath, ClassesRefuseSharedLinks) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const auto source = coll::open_schedule("nccl_ring", t.rank_layout(), 16 * 64 + 1);
  EventSimOptions o;
  o.rank_start_us.assign(16, 0.0);
  o.rank_start_us[3] = 2.0;
  const EventSimResult fast = simulate_schedule(*source, t, o);
  EXPECT_EQ(fast.class_period, 0);
  o.fast_path = false;
  expect_same(fast, simulate_schedule(*source, t, o));
}

TEST(FastPath, ContentionFallsBackToTheEventQueue) {
  // A rank sends to two children at once over one uplink in a binary tree on flat.
  EXPECT_EQ(period_of("flat:ranks=16", "dbtree", 16 * 1000), 0);
  EXPECT_EQ(period_of("fat-tree:nodes=8,gpus=8,nics=8,oversub=4", "rhd", 64 * 1000), 0);
}

// rhd with one rank late on an oversubscribed fat-tree (links shared, so no sweep): the event
// queue runs every rank until the delay has reached them all and the pairs of one step start
// together again, then folds the rest by rhd's XOR symmetry. It must give the unfolded event
// queue's results. Every rank equally late folds from the first step.
TEST(FastPath, LateRanksThatCatchUpFoldTheRest) {
  const topo::Topology t = topo::load_topology("fat-tree:nodes=8,gpus=8,nics=8,oversub=4");
  const int p = t.num_ranks();
  const auto source = coll::open_schedule("rhd", t.rank_layout(), static_cast<std::size_t>(p) * 1000);
  const auto late_run = [&](const std::vector<double>& starts, bool fast) {
    EventSimOptions o;
    o.fast_path = fast;
    o.rank_start_us = starts;
    return simulate_schedule(*source, t, o);
  };
  for (int late : {0, 5, 63}) {
    for (double by : {5.0, 2000.0}) {
      SCOPED_TRACE("rank " + std::to_string(late) + " late by " + std::to_string(by) + " us");
      std::vector<double> starts(static_cast<std::size_t>(p), 0.0);
      starts[static_cast<std::size_t>(late)] = by;
      const EventSimResult fast = late_run(starts, true);
      const EventSimResult queue = late_run(starts, false);
      expect_same(fast, queue);
      EXPECT_GT(fast.event_fold_from_step, 0u);
      EXPECT_GT(fast.event_fold_period, 0);
      EXPECT_LT(fast.event_fold_period, p);
      EXPECT_EQ(queue.event_fold_from_step, 0u);
      EXPECT_EQ(queue.event_fold_period, 0);
    }
  }
  const std::vector<double> together(static_cast<std::size_t>(p), 7.0);
  const EventSimResult fast = late_run(together, true);
  expect_same(fast, late_run(together, false));
  EXPECT_GT(fast.event_fold_period, 0);
  EXPECT_EQ(fast.event_fold_from_step, 0u);
}

// Late ranks in many shapes (one rank, one host, several ranks late by different times) on
// machines whose links rhd's and the rings' exchanges share: whether or not the run folds again
// after catching up, the unfolded event queue's results.
TEST(FastPath, LateRanksFoldedAgainOrNotGiveTheEventQueuesResults) {
  int refolded = 0, cases = 0;
  for (const char* spec : {"fat-tree:nodes=8,gpus=8,nics=8,oversub=4", "fat-tree:nodes=16,gpus=4,nics=1,oversub=2",
                           "dgx-h100:nodes=4", "flat:ranks=32"}) {
    const topo::Topology t = topo::load_topology(spec);
    const int p = t.num_ranks();
    const RankLayout layout = t.rank_layout();
    for (const char* algo : {"rhd", "ring", "nccl_ring"}) {
      const auto source = coll::open_schedule(algo, layout, static_cast<std::size_t>(p) * 512);
      for (int shape = 0; shape < 4; ++shape) {
        std::vector<double> starts(static_cast<std::size_t>(p), 0.0);
        if (shape == 0) starts[1] = 3.0;                                   // one rank, a little
        if (shape == 1) starts[static_cast<std::size_t>(p - 1)] = 5000.0;  // one rank, longer than a step
        if (shape == 2)
          for (int r = 0; r < p; r += 7) starts[static_cast<std::size_t>(r)] = 10.0 * (r % 3 + 1);  // several
        if (shape == 3)
          for (int r : layout.ranks_on_host(1 % layout.nhosts())) starts[static_cast<std::size_t>(r)] = 40.0;  // a host
        SCOPED_TRACE(std::string(spec) + " " + algo + " shape " + std::to_string(shape));
        EventSimOptions o;
        o.rank_start_us = starts;
        const EventSimResult fast = simulate_schedule(*source, t, o);
        o.fast_path = false;
        expect_same(fast, simulate_schedule(*source, t, o));
        ++cases;
        if (fast.event_fold_from_step > 0) ++refolded;
      }
    }
  }
  EXPECT_EQ(cases, 48);
  EXPECT_GE(refolded, 16);  // every rhd case (20 of the 48 at the time of writing: some rings too)
}

// dbtree's ranks never start a step together, and a ring on a machine whose links differ has no
// symmetry to fold by: with a late rank both run unfolded to the end.
TEST(FastPath, LateRanksThatNeverCatchUpRunUnfolded) {
  topo::Topology t = topo::load_topology("fat-tree:nodes=8,gpus=8,nics=8,oversub=4");
  const int p = t.num_ranks();
  std::vector<double> starts(static_cast<std::size_t>(p), 0.0);
  starts[3] = 20.0;
  EventSimOptions o;
  o.rank_start_us = starts;
  const auto dbtree = coll::open_schedule("dbtree", t.rank_layout(), static_cast<std::size_t>(p) * 1000);
  const EventSimResult tree = simulate_schedule(*dbtree, t, o);
  EXPECT_EQ(tree.event_fold_period, 0);
  EXPECT_EQ(tree.event_fold_from_step, 0u);
  const std::size_t l = t.route(8, 9, 0).links.front();
  t.set_link_figures(l, 2 * t.link(l).bandwidth_gbps, t.link(l).latency_us);
  const auto rhd = coll::open_schedule("rhd", t.rank_layout(), static_cast<std::size_t>(p) * 1000);
  const EventSimResult fast = simulate_schedule(*rhd, t, o);
  o.fast_path = false;
  expect_same(fast, simulate_schedule(*rhd, t, o));
  EXPECT_EQ(fast.event_fold_period, 0);
  EXPECT_EQ(fast.event_fold_from_step, 0u);
}

// Unfolded runs on 2,048 ranks or more find their routes ahead on a second thread
// (event_sim_prefetch.hpp): rhd with a late rank until it folds again, and a double binary tree
// with a late rank and an uneven size, never folded. The event queue on one thread gives the
// same results. How many routes the thread found first depends on how the threads ran, so each
// case runs until it did find some (nearly always the first time; a run where the thread has
// not yet started finds none and is still compared).
TEST(FastPath, RoutesFoundAheadAreTheEventQueuesOwn) {
  const topo::Topology t = topo::load_topology("fat-tree:nodes=256,gpus=8,nics=8,oversub=4");
  const int p = t.num_ranks();
  ASSERT_EQ(p, 2048);
  std::vector<double> starts(static_cast<std::size_t>(p), 0.0);
  starts[5] = 5.0;
  EventSimOptions o;
  o.rank_start_us = starts;
  for (const char* algo : {"rhd", "dbtree"}) {
    SCOPED_TRACE(algo);
    const std::size_t count = static_cast<std::size_t>(p) * 256 + (std::string(algo) == "dbtree" ? 1 : 0);
    const auto source = coll::open_schedule(algo, t.rank_layout(), count);
    o.fast_path = false;
    const EventSimResult queue = simulate_schedule(*source, t, o);
    EXPECT_EQ(queue.routes_found_ahead, 0u);
    o.fast_path = true;
    std::size_t found = 0;
    for (int attempt = 0; attempt < 10 && found == 0; ++attempt) {
      const EventSimResult fast = simulate_schedule(*source, t, o);
      expect_same(fast, queue);
      EXPECT_EQ(fast.event_fold_period > 0, std::string(algo) == "rhd");
      found = fast.routes_found_ahead;
      EXPECT_LE(found, fast.flows);
    }
    EXPECT_GT(found, 0u);
  }
}

// A schedule the engine refuses at a later step (a send to its own rank) is refused the same way
// with the second thread walking ahead: the thread stops where it meets it and the event queue
// reports it.
TEST(FastPath, RoutesFoundAheadStopAtAMalformedStep) {
  const topo::Topology t = topo::load_topology("fat-tree:nodes=256,gpus=8,nics=8,oversub=4");
  const int p = t.num_ranks();
  coll::Schedule schedule =
      coll::materialize(*coll::open_schedule("rhd", t.rank_layout(), static_cast<std::size_t>(p) * 64));
  for (coll::Op& op : schedule.ranks[77][4].ops) op.peer = 77;
  const coll::StoredSteps source(schedule);
  for (bool fast : {true, false}) {
    EventSimOptions o;
    o.fast_path = fast;
    try {
      simulate_schedule(source, t, o);
      ADD_FAILURE() << "a send to itself was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rank 77"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("out of range or self"), std::string::npos) << e.what();
    }
  }
}

TEST(FastPath, AnAsymmetricMachineIsNotFolded) {
  // flat:ranks=8 plus a faster direct link 0 -> 1: rotations of the ring no longer look alike.
  topo::Topology t = topo::load_topology("flat:ranks=8");
  t.add_link(t.device_of_rank(0), t.device_of_rank(1), topo::LinkKind::nvlink, 400, 0.1);
  const auto source = coll::open_schedule("ring", t.rank_layout(), 8 * 100);
  const EventSimResult fast = run(*source, t, true);
  expect_same(fast, run(*source, t, false));
  EXPECT_EQ(fast.fast_path_period, 8);
}

// nccl_ring's channels (one per local rank here: no NCCL orders) share every GPU's link to its
// switch from the first step, so the sweep refuses; the event queue then folds by the schedule's
// rotation symmetry (one server's ranks) and must give the unfolded event queue's results.
TEST(FastPath, SharedLinksFoldTheEventQueue) {
  for (const char* spec : {"dgx-h100:nodes=4", "fat-tree:nodes=8,gpus=4,nics=4,leaf_ports=8"}) {
    const topo::Topology t = topo::load_topology(spec);
    const RankLayout layout = t.rank_layout();
    const int p = layout.nranks();
    for (std::size_t chunk : {std::size_t{0}, std::size_t{40}}) {
      coll::AlgoOptions options;
      options.chunk_elems = chunk;
      const auto source = coll::open_schedule("nccl_ring", layout, static_cast<std::size_t>(p) * 96 * 8, options);
      SCOPED_TRACE(std::string(spec) + " chunk " + std::to_string(chunk));
      const EventSimResult fast = run(*source, t, true);
      const EventSimResult queue = run(*source, t, false);
      expect_same(fast, queue);
      EXPECT_EQ(fast.fast_path_period, 0);
      EXPECT_GT(fast.event_fold_period, 0);
      EXPECT_LT(fast.event_fold_period, p);
      EXPECT_EQ(p % fast.event_fold_period, 0);
      EXPECT_EQ(queue.event_fold_period, 0);
    }
  }
}

// One GPU's link to the NVSwitch twice as fast: every route keeps its bottleneck and latency, so
// the routes still rotate, but that link's class would share two bandwidths. Not folded.
TEST(FastPath, AClassOfUnequalLinksIsNotFoldedInTheEventQueue) {
  topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const std::size_t l = t.route(8, 9, 0).links.front();
  t.set_link_figures(l, 2 * t.link(l).bandwidth_gbps, t.link(l).latency_us);
  const auto source = coll::open_schedule("nccl_ring", t.rank_layout(), 16 * 96 * 8);
  const EventSimResult fast = run(*source, t, true);
  expect_same(fast, run(*source, t, false));
  EXPECT_EQ(fast.event_fold_period, 0);
}

TEST(FastPath, UnevenChannelsAreNotFoldedInTheEventQueue) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const auto source = coll::open_schedule("nccl_ring", t.rank_layout(), 16 * 96 * 8 + 3);
  const EventSimResult fast = run(*source, t, true);
  expect_same(fast, run(*source, t, false));
  EXPECT_EQ(fast.event_fold_period, 0);
}

TEST(FastPath, AnOversizedTraceIsRefused) {
  const topo::Topology t = topo::load_topology("flat:ranks=8");
  const auto source = coll::open_schedule("ring", t.rank_layout(), 800);
  EventSimOptions o;
  o.record_trace = true;
  o.max_trace_slices = 10;  // the ring has 2 x 8 x 14 slices plus reductions
  EXPECT_THROW(simulate_schedule(*source, t, o), Error);
}

TEST(FastPath, TracesComeFromTheEventQueue) {
  const topo::Topology t = topo::load_topology("flat:ranks=4");
  const auto source = coll::open_schedule("ring", t.rank_layout(), 400);
  EventSimOptions o;
  o.record_trace = true;
  const EventSimResult r = simulate_schedule(*source, t, o);
  EXPECT_EQ(r.fast_path_period, 0);
  EXPECT_FALSE(r.trace.empty());
}

}  // namespace
}  // namespace colltune::sim
