#pragma once
// Seeded random machines and schedules for the differential test of the event simulator's
// engines (test_event_sim_reference.cpp). Everything is drawn from one std::mt19937_64, so a
// seed names a case: a failure message prints the seed and the description to rerun it.
#include <cstddef>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "colltune/collectives/step_source.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim::testing {

using Rng = std::mt19937_64;

// How big the drawn cases are.
struct Sizes {
  int max_random_ranks = 12;   // ranks of a random multigraph
  int max_preset_ranks = 32;   // ranks of a drawn preset (flat, fat-tree, torus, dgx-h100:nodes=2)
  std::size_t max_count = 4096;  // elements of a collective or of one random transfer
  // The registered algorithms random_algorithm draws from, in registry order; empty: all of
  // them. A seed names a case only together with this list: registering an algorithm changes
  // the draws, so a regression test that keeps a seed keeps the list it was found with.
  std::vector<std::string> algorithms;
};

struct Machine {
  topo::Topology topology;
  std::string what;  // "random(hosts 3, ranks 7, ...)" or the preset spec
};

// A random directed multigraph: hosts with GPUs (some hosting two ranks), switches, a duplex
// spanning tree that keeps it connected plus extra one-way and duplex links (parallel ones
// too), random bandwidths, latencies (zero included) and reduce rates (zero: no reduction cost).
// Bandwidths and latencies come from small sets on half the seeds, so that times tie.
Machine random_multigraph(Rng& rng, const Sizes& sizes);
// A machine invariant under rotating its ranks by a period d (the ring's folding applies): copies
// of one random pattern of d GPUs around a switch, the switches joined in a ring or through one
// hub link that every copy's traffic crosses (shared by all copies: contention the folded sweep
// must see), plus direct GPU links within a copy or to the next.
Machine random_symmetric(Rng& rng, const Sizes& sizes);
// A preset with drawn parameters: flat (hosts, reduce rate), fat-tree with oversubscription,
// dgx-h100:nodes=2, dgx-a100:nodes=2 or a 2-D / 3-D torus.
Machine random_preset(Rng& rng, const Sizes& sizes);

struct Workload {
  std::unique_ptr<coll::StepSource> source;
  std::size_t elem_size = 4;
  std::string what;
};

// A registered algorithm (any collective) on the machine's rank layout, with a drawn count,
// chunking and inner algorithm: generated step by step where the algorithm has a generator
// (the ring family, which declares its rotation symmetry), else stored.
Workload random_algorithm(Rng& rng, const topo::Topology& topology, const Sizes& sizes);
// One of the ring family (ring, reduce_scatter_ring, allgather_ring, nccl_ring: generated, with
// their declared rotation symmetry) with a drawn count and chunking: on a symmetric machine
// nccl_ring's channels share links, which the event queue folds.
Workload random_ring_family(Rng& rng, const topo::Topology& topology, const Sizes& sizes);
// Two or three registered algorithms at once on disjoint random rank sets (run_concurrently).
Workload random_concurrent(Rng& rng, const topo::Topology& topology, const Sizes& sizes);
// Random pairwise transfers (copies and reductions, zero-byte ones, several on one channel at
// once, on op channels 0..3) in a global order; each rank takes its ops in that order and cuts them into steps at
// random points, which keeps the schedule free of deadlock while varying how much runs at once.
Workload random_exchange(Rng& rng, int nranks, const Sizes& sizes);

}  // namespace colltune::sim::testing
