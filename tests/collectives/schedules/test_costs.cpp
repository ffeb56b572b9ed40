// Cost hints against (1) the textbook closed forms of docs/design.md and (2) the reference pricer
// (sim/pricer.hpp), which defines the machine model and walks the very schedule build() produces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/pricer.hpp"

using namespace colltune;
using namespace colltune::coll;

namespace {

LevelCosts test_costs() {
  LevelCosts c;
  c.alpha_intra_us = 2.0;
  c.beta_intra_us_per_byte = 1e-4;  // 10 GB/s
  c.alpha_inter_us = 7.0;
  c.beta_inter_us_per_byte = 4e-4;  // 2.5 GB/s
  c.gamma_us_per_byte = 3e-5;
  return c;
}

double rel(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-12}); }

// The closed-form hint, for algorithms that have one.
double hint(const std::string& id, const RankLayout& l, std::size_t count, const AlgoOptions& o,
            const LevelCosts& c = test_costs()) {
  return find_algorithm(id).cost(l, count * 4, 4, o, c).value();
}

// What the cost model predicts: the hint where there is one, else the priced schedule.
double predicted(const std::string& id, const RankLayout& l, std::size_t count, const AlgoOptions& o,
                 const LevelCosts& c = test_costs()) {
  return sim::hint_or_price(find_algorithm(id), l, count * 4, 4, o, c);
}

double priced(const std::string& id, const RankLayout& l, std::size_t count, const AlgoOptions& o,
              const LevelCosts& c = test_costs()) {
  return sim::price_schedule(StoredSteps(build_schedule(id, l, count, o)), l, 4, c);
}

// One algorithm on one layout: hint vs priced schedule for several counts, with and without
// chunking.
void expect_hint_matches_price(const Algorithm& a, const RankLayout& l, const LevelCosts& c) {
  const auto p = static_cast<std::size_t>(l.nranks());
  const bool pow2_hosts = (l.max_ranks_per_host() & (l.max_ranks_per_host() - 1)) == 0;
  for (std::size_t count : {p * 6000, p * 6000 + 3, std::size_t{1001}, p * 64}) {
    for (std::size_t chunk : {std::size_t{0}, std::size_t{500}}) {
      AlgoOptions o;
      o.chunk_elems = chunk;
      if (a.not_applicable(l, count, o) || !a.cost || !a.cost(l, count * 4, 4, o, c)) continue;
      SCOPED_TRACE(a.id + " p=" + std::to_string(p) + " hosts=" + std::to_string(l.nhosts()) + " count=" +
                   std::to_string(count) + " chunk=" + std::to_string(chunk) +
                   " separate_level_ports=" + std::to_string(c.separate_level_ports) +
                   " beta_host=" + std::to_string(c.beta_host_us_per_byte));
      const double h = hint(a.id, l, count, o, c);
      const double priced_time = priced(a.id, l, count, o, c);
      const bool even = count % (p * 2) == 0 && (chunk == 0 || (count / p) % chunk == 0);
      const bool exact = l.nhosts() == 1 ? (even || a.id.find("rd") != std::string::npos ||
                                           a.id.find("rh") != std::string::npos)
                                         : even && (a.id != "tree" || pow2_hosts);
      if (l.nhosts() == 1) {
        // Binomial trees (hierarchical_leader is one on a single host) with uneven chunks:
        // the root's ports share their bandwidth, so its smaller chunks arrive first and
        // their reductions start early; the hint prices them all at the step's full load.
        const bool binomial = a.id == "tree" || a.id == "hierarchical_leader";
        EXPECT_LT(rel(h, priced_time), binomial && !even ? 6e-3 : 1e-3);
      }
      if (exact) {
        EXPECT_LT(rel(h, priced_time), 1e-9);
      }
      EXPECT_GE(h, priced_time * (1 - 1e-9));
      EXPECT_LE(h, priced_time * 1.25);
    }
  }
}

}  // namespace

TEST(CostHints, TextbookFormulasOnOneLevel) {
  const LevelCosts c = test_costs();
  const double a = c.alpha_intra_us, b = c.beta_intra_us_per_byte, g = c.gamma_us_per_byte;
  for (int p : {2, 3, 4, 5, 8, 12, 16}) {
    const RankLayout l = RankLayout::single_host(p);
    const std::size_t count = static_cast<std::size_t>(p) * 4096;
    const double n = static_cast<double>(count * 4);
    const double f = static_cast<double>(p - 1) / p;
    EXPECT_LT(rel(hint("ring", l, count, {}), 2 * (p - 1) * a + 2 * f * n * b + f * n * g), 1e-12) << p;
    if ((p & (p - 1)) == 0) {
      const double lg = std::log2(p);
      EXPECT_LT(rel(hint("rhd", l, count, {}), 2 * lg * a + 2 * f * n * b + f * n * g), 1e-12) << p;
      EXPECT_LT(rel(hint("tree", l, count, {}), 2 * lg * a + 2 * n * lg * b + n * lg * g), 1e-12) << p;
      EXPECT_LT(rel(hint("reduce_scatter_rh", l, count, {}), lg * a + f * n * b + f * n * g), 1e-12) << p;
    }
    EXPECT_LT(rel(hint("reduce_scatter_ring", l, count, {}), (p - 1) * a + f * n * b + f * n * g), 1e-12) << p;
    EXPECT_LT(rel(hint("allgather_ring", l, count, {}), (p - 1) * a + f * n * b), 1e-12) << p;
  }
}

TEST(CostHints, OneRankAndNoDataCostNothing) {
  for (const Algorithm& a : algorithms()) {
    EXPECT_EQ(sim::hint_or_price(a, RankLayout::single_host(1), 4096, 4, {}, test_costs()), 0.0) << a.id;
    // Where the algorithm applies: the in-switch ones need their switch ranks (test_in_network).
    if (a.not_applicable(RankLayout::single_host(4), 0, {})) continue;
    EXPECT_EQ(sim::hint_or_price(a, RankLayout::single_host(4), 0, 4, {}, test_costs()), 0.0) << a.id;
  }
}

// Hint vs the priced schedule for p = 1..17 on one host and several uniform multi-host
// layouts, with and without chunking, and on several hosts with one port per rank and
// direction (flat) or one per level (NVLink + NIC: LevelCosts::separate_level_ports).
// Exact where the README ("Cost model of the hints") says so; an upper bound elsewhere.
TEST(CostHints, MatchThePricedSchedule) {
  std::vector<RankLayout> layouts;
  for (int p = 1; p <= 17; ++p) layouts.push_back(RankLayout::single_host(p));
  for (auto [h, l] : {std::pair{2, 2}, {2, 4}, {4, 2}, {3, 3}, {2, 8}, {4, 4}, {3, 5}}) layouts.push_back(RankLayout::uniform(h, l));
  for (const Algorithm& a : algorithms()) {
    for (const RankLayout& l : layouts) {
      for (bool separate : {false, true}) {
        // Hosts' NICs: no sharing, two NICs' worth (binds from three crossing messages), one
        // NIC shared by every rank of the host.
        for (double host_nics : {0.0, 2.0, 1.0}) {
          if ((separate || host_nics > 0) && l.nhosts() == 1) continue;  // one level, no NICs
          LevelCosts c = test_costs();
          c.separate_level_ports = separate;
          c.beta_host_us_per_byte = host_nics > 0 ? c.beta_inter_us_per_byte / host_nics : 0.0;
          expect_hint_matches_price(a, l, c);
        }
      }
    }
  }
}
// With fewer elements than ranks, the n one-element segments travel side by side and a rank
// whose segments are empty skips the step, so the slowest link does not delay every step: the
// ring hints price those steps one by one, exactly as the reference pricer runs the schedule, on
// hosts of consecutive ranks (of equal or unequal sizes), one rank per host, per-level ports,
// shared NICs, near-latency groups and group trunks. Where the ring enters a host twice (hosts
// interleaved) its messages can share the host's NICs and the per-step upper bound stands.
TEST(CostHints, RingsWithFewerElementsThanRanksArePricedStepByStep) {
  std::vector<RankLayout> layouts = {RankLayout::uniform(4, 8), RankLayout::uniform(9, 1), RankLayout::uniform(3, 5),
                                     RankLayout({0, 0, 0, 1, 2, 2, 2, 2, 2, 3, 3})};
  std::vector<LevelCosts> machines;
  for (bool separate : {false, true})
    for (double host_nics : {0.0, 1.0}) {
      LevelCosts c = test_costs();
      c.separate_level_ports = separate;
      c.beta_host_us_per_byte = host_nics > 0 ? c.beta_inter_us_per_byte / host_nics : 0.0;
      machines.push_back(c);
    }
  LevelCosts grouped = test_costs();  // hosts 0-1 and 2-3 behind one leaf each, 0-1 nearer
  grouped.host_group = {0, 0, 1, 1, 2, 2, 3, 3, 4};
  grouped.beta_group_us_per_byte = 2e-3;
  grouped.near_group = {0, 0, 1, 1, 2, 2, 3, 3, 4};
  grouped.alpha_near_us = 3.0;
  machines.push_back(grouped);
  const RankLayout& hosts = layouts.front();
  const double per_step_bound = 2 * 31 * test_costs().alpha_inter_us;
  EXPECT_LT(hint("ring", hosts, 5, {}), 0.5 * per_step_bound);  // the bound the hint was before
  for (const RankLayout& l : layouts) {
    const auto p = static_cast<std::size_t>(l.nranks());
    for (const LevelCosts& c : machines) {
      for (const char* id : {"ring", "reduce_scatter_ring", "allgather_ring"}) {
        for (std::size_t count : {std::size_t{1}, std::size_t{2}, p / 2, p - 1}) {
          SCOPED_TRACE(std::string(id) + " p=" + std::to_string(p) + " hosts=" + std::to_string(l.nhosts()) +
                       " count=" + std::to_string(count) + " separate=" + std::to_string(c.separate_level_ports) +
                       " beta_host=" + std::to_string(c.beta_host_us_per_byte) +
                       " groups=" + std::to_string(c.host_group.size()));
          EXPECT_LT(rel(hint(id, l, count, {}, c), priced(id, l, count, {}, c)), 1e-12);
        }
      }
    }
  }
  const RankLayout interleaved({0, 1, 0, 1, 0, 1});
  LevelCosts nics = test_costs();
  nics.beta_host_us_per_byte = nics.beta_inter_us_per_byte;
  for (std::size_t count : {1, 3, 5})
    EXPECT_GE(hint("ring", interleaved, count, {}, nics), priced("ring", interleaved, count, {}, nics) * (1 - 1e-12));
}

TEST(CostHints, ChunkingAddsLatencyOnlyWhereItPipelines) {
  const RankLayout l = RankLayout::single_host(8);
  AlgoOptions chunked;
  chunked.chunk_elems = 1024;
  const std::size_t count = 8 * 65536;
  // dbtree pipelines: chunking makes it faster for large buffers; the binomial tree's root
  // is the bottleneck either way, so chunking only adds latencies.
  EXPECT_LT(predicted("dbtree", l, count, chunked), predicted("dbtree", l, count, {}));
  EXPECT_GT(predicted("tree", l, count, chunked), predicted("tree", l, count, {}));
}

// A long pipeline priced from three short ones (sim::price_pipeline) equals the priced whole
// schedule, for every algorithm that declares its pipeline pieces, on one and several hosts,
// with even and uneven last chunks and both port models.
TEST(CostHints, PipelineExtrapolationMatchesTheWholeSchedule) {
  std::vector<RankLayout> layouts;
  for (int p : {2, 3, 5, 8, 13}) layouts.push_back(RankLayout::single_host(p));
  for (auto [h, l] : {std::pair{2, 4}, {3, 3}, {4, 2}}) layouts.push_back(RankLayout::uniform(h, l));
  int extrapolated = 0;
  int cases = 0;
  for (const Algorithm& a : algorithms()) {
    if (!a.pipeline_pieces) continue;
    for (const RankLayout& l : layouts) {
      for (const char* inner : {"ring"}) {
        for (std::size_t dbtree_count : {std::size_t{20011}, std::size_t{24000}}) {
          for (bool separate : {false, true}) {
            AlgoOptions o;
            o.chunk_elems = 37;
            o.inner = inner;
            // As many rounds per piece as dbtree's two halves have (nccl_tree: 2k pieces).
            const std::size_t count = dbtree_count * std::max<std::size_t>(a.pipeline_pieces(l, o) / 2, 1);
            LevelCosts c = test_costs();
            c.separate_level_ports = separate && l.nhosts() > 1;
            if (a.not_applicable(l, count, o)) continue;
            SCOPED_TRACE(a.id + "(" + inner + ") p=" + std::to_string(l.nranks()) + " hosts=" +
                         std::to_string(l.nhosts()) + " count=" + std::to_string(count));
            const double whole = sim::price_schedule(StoredSteps(build_schedule(a.id, l, count, o)), l, 4, c);
            bool shortcut = false;
            EXPECT_LT(rel(sim::price_pipeline(a, l, count, 4, o, c, &shortcut), whole), 1e-9);
            extrapolated += shortcut ? 1 : 0;
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 20);
  EXPECT_EQ(extrapolated, cases) << "every case is a long pipeline: each must take the shortcut";
}

// price_pipeline keeps the short pipelines it prices: buffers with the same last chunks reuse
// them, and a change of any input (costs, ports, layout, chunk, element size) prices anew. Each
// case is held to its own whole schedule, priced after the others so that a stale reuse shows.
TEST(CostHints, PipelineMemoReusesOnlyIdenticalShortPipelines) {
  const Algorithm& a = find_algorithm("dbtree");
  struct Case {
    RankLayout layout;
    std::size_t count;
    std::size_t chunk;
    std::size_t elem;
    bool separate;
    double gamma;
  };
  const RankLayout two = RankLayout::uniform(2, 4);
  const RankLayout three = RankLayout::uniform(4, 2);
  const std::vector<Case> cases = {
      {two, 40000, 37, 4, false, 3e-5}, {two, 40000 + 10 * 74, 37, 4, false, 3e-5},  // same last chunks
      {two, 40000, 37, 4, true, 3e-5},  {two, 40000, 37, 4, false, 9e-5},            // other costs
      {three, 40000, 37, 4, false, 3e-5}, {two, 40000, 41, 4, false, 3e-5},          // layout, chunk
      {two, 40000, 37, 2, false, 3e-5}};
  std::vector<double> predicted_times;
  for (const Case& k : cases) {
    AlgoOptions o;
    o.chunk_elems = k.chunk;
    LevelCosts c = test_costs();
    c.separate_level_ports = k.separate;
    c.gamma_us_per_byte = k.gamma;
    bool shortcut = false;
    predicted_times.push_back(sim::price_pipeline(a, k.layout, k.count, k.elem, o, c, &shortcut));
    EXPECT_TRUE(shortcut);
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    AlgoOptions o;
    o.chunk_elems = k.chunk;
    LevelCosts c = test_costs();
    c.separate_level_ports = k.separate;
    c.gamma_us_per_byte = k.gamma;
    const double whole = sim::price_schedule(StoredSteps(build_schedule(a.id, k.layout, k.count, o)), k.layout, k.elem, c);
    EXPECT_LT(rel(predicted_times[i], whole), 1e-9) << "case " << i;
  }
}

// Hierarchical over an inner algorithm without a closed form (dbtree): the hint prices the
// intra-host rings in closed form and the inner part with the pricer, and equals the priced
// whole schedule where the hierarchical hint is exact (uniform hosts, even counts).
TEST(CostHints, HierarchicalOverAPricedInnerMatchesTheWholeSchedule) {
  for (auto [h, l] : {std::pair{2, 2}, {2, 4}, {4, 2}, {3, 3}, {2, 8}, {4, 4}}) {
    const RankLayout layout = RankLayout::uniform(h, l);
    for (const char* id : {"hierarchical", "hierarchical_leader"}) {
      for (std::size_t chunk : {std::size_t{0}, std::size_t{500}}) {
        for (bool separate : {false, true}) {
          AlgoOptions o;
          o.inner = "dbtree";
          o.chunk_elems = chunk;
          LevelCosts c = test_costs();
          c.separate_level_ports = separate;
          c.beta_host_us_per_byte = separate ? c.beta_inter_us_per_byte : 0.0;  // one NIC per host, or none shared
          const std::size_t count = static_cast<std::size_t>(layout.nranks()) * 6000;
          SCOPED_TRACE(std::string(id) + " " + std::to_string(h) + "x" + std::to_string(l) + " chunk=" +
                       std::to_string(chunk) + " separate=" + std::to_string(separate));
          EXPECT_FALSE(find_algorithm(id).cost(layout, count * 4, 4, o, c)) << "no closed form without a pricer";
          const double whole = priced(id, layout, count, o, c);
          const double h_time = predicted(id, layout, count, o, c);
          if (std::string(id) == "hierarchical") {
            EXPECT_LT(rel(h_time, whole), 1e-9);
          }
          EXPECT_GE(h_time, whole * (1 - 1e-9));
          EXPECT_LE(h_time, whole * 1.25);
        }
      }
    }
  }
}
