#pragma once
// Human- and tool-readable views of a topology: the `colltune topo show` summary, the slowest
// rank-to-rank route, and Graphviz DOT.
#include <cstddef>
#include <string>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

struct RankPairRoute {
  int src = 0;
  int dst = 0;
  Path path;
  int sources_searched = 0;  // source ranks whose routes to every rank were examined
};

// The slowest route between two ranks: the lowest bottleneck bandwidth, ties broken toward the
// higher latency. Every source rank is searched when there are at most `max_sources` ranks and
// the search fits kSlowestRouteBudget; otherwise fewer, evenly spaced source ranks (each against
// every destination). A source costs a search of the whole graph plus the hops of its routes to
// every rank (measured on source 0, the first of every spacing), so the budget keeps the summary
// linear in the machine's size: seconds for a 131,072-rank fat-tree or torus (minutes when 256
// sources were searched at any size). With a single rank, the result is the empty route from
// rank 0 to itself.
inline constexpr std::size_t kSlowestRouteBudget = std::size_t{1} << 24;  // devices + links + hops, summed over sources
// `budget` is for benchmarks (SIZE_MAX: the unbudgeted search of `max_sources` sources).
RankPairRoute slowest_route(const Topology& topology, int max_sources = 256,
                            std::size_t budget = kSlowestRouteBudget);

// One line per hop: "node0/gpu0 -> node0/nvswitch  nvlink  450 GB/s  0.35 us".
std::string path_text(const Topology& topology, const Path& path, const std::string& indent = "  ");

// The `topo show` summary: hosts, devices by kind, link classes (kind, bandwidth, latency,
// count), ranks per host and the slowest rank-to-rank route with its hops.
std::string summary_text(const Topology& topology);
// The same summary as JSON (`colltune topo show --json`): every host's rank ranges, the link
// classes with their figures, and the slowest route with its hops (null with one rank).
std::string summary_json(const Topology& topology);

// Graphviz DOT: one cluster per host, duplex links drawn once with arrows at both ends.
std::string to_dot(const Topology& topology);

}  // namespace colltune::topo
