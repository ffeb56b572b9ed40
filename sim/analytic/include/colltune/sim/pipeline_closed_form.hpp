#pragma once
// Closed forms of the reference pricer for single-round pipelines, found by the pricer itself
// (sim/analytic/src/parametric_pricer.hpp): the price as an affine function of the pieces' size.
//
// A pipelined algorithm (Algorithm::pipeline_pieces: P pieces of count/P elements, count % P of
// them one larger, each cut in chunks of chunk_elems) whose pieces are one chunk each (no
// chunking, or a piece no larger than a chunk) builds, for every such count with the same
// remainder count % P, the same steps, ops and peers, with counts q or q + 1 for q = count / P:
// one family of sizes. Its shape is checked, not assumed (once for every machine: it does not
// depend on the costs): the schedules at both ends of the family and at the first point priced
// must be one affine function of q, op by op (nccl_nvls
// without a chunk, which picks its own chunk from the size, is not). Pipelines of several rounds
// are priced whole: their last chunk crosses the earlier ones at every few elements of q, so one
// parametric run covers a sliver of a family (measured: 50 runs for 30 sizes of a 16-round dbtree
// on 64 ranks, slower than pricing the 30 whole).
//
// Inside a family the pricer's result is piecewise affine in q: affine wherever its decisions
// (which message leaves a port first, the later of two times, the order each port and rank sees
// its events in) go the same way. The pieces are found by parametric runs at canonical points: the
// golden section of the family's range (geometric where it spans more than a factor of 4), then,
// for a q outside the piece found there, the golden section of the part of the range on q's side,
// and so on (at most 8 runs, else the count is priced whole). A request's price depends only on its
// family and q, not on what was priced before it nor on other threads. Every price is the plain
// pricer's to rounding (tests/sim/analytic/test_pipeline_closed_form.cpp), except at an isolated q
// where two of the plain pricer's times tie exactly and its first-come order moves the price off
// its neighbours' line (up to 0.1% on 512 ranks): there the closed form gives that line. Each
// piece is checked against whole prices at its ends before it is kept. One run on a large
// machine covers every size from a few elements a piece up: a dbtree or nccl_tree without chunks
// on 512 ranks is one run for every buffer a tune asks for.
#include <cstddef>
#include <string>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::sim {

// How prices were obtained (counted for tests and benchmarks).
struct FamilyCounts {
  std::size_t from_closed_form = 0;  // a + b q of a known piece
  std::size_t parametric_runs = 0;   // pricer runs on affine numbers (each gives a piece)
  std::size_t whole_pricings = 0;    // plain pricer runs (no family, or a family too fragmented)
  std::size_t from_memo = 0;         // a count priced whole before
  std::size_t family_checks = 0;     // families' schedules checked affine (once per layout and options)
  std::size_t schedule_builds = 0;   // schedules built at a family's points (kept for other machines)
};

// The reference pricer's price of `algorithm`'s schedule of `count` elements with `options`,
// from its family's closed form where one holds, else priced whole (kept, by `key` and count:
// `key` names everything but the count the price depends on, as cost_model.cpp builds it).
// `schedules` names what the schedules depend on (algorithm, options, layout; not the costs):
// whether a family's schedules are affine in its size is checked once for all machines
// (a bottleneck's what-if machines, a sweep's points on one layout), and the schedules at its
// points are built once while they are among the last few built. Without `use_family`, always
// priced whole (cost_model.hpp, SizeFamilies::skip).
double price_by_family(const std::string& key, const std::string& schedules, const coll::Algorithm& algorithm,
                       const RankLayout& layout, std::size_t count, std::size_t elem_size,
                       const coll::AlgoOptions& options, const coll::LevelCosts& levels, bool use_family = true);

// Counts since the process started (every thread's).
FamilyCounts family_counts();

// Forgets every family and whole price kept: each is priced anew, as in a fresh process.
void forget_family_prices();

}  // namespace colltune::sim
