// Closed forms of single-round pipelines (sim/pipeline_closed_form.hpp) against the reference
// pricer run whole, on every algorithm that declares its pipeline pieces, several layouts and
// both port models; and the properties the tuner relies on: one parametric run answers many
// sizes, and a price does not depend on what was priced before it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/pipeline_closed_form.hpp"
#include "colltune/sim/pricer.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

coll::LevelCosts test_costs(bool separate, double host_nics) {
  coll::LevelCosts c;
  c.alpha_intra_us = 2.0;
  c.beta_intra_us_per_byte = 1e-4;
  c.alpha_inter_us = 7.0;
  c.beta_inter_us_per_byte = 4e-4;
  c.gamma_us_per_byte = 3e-5;
  c.separate_level_ports = separate;
  c.beta_host_us_per_byte = host_nics > 0 ? c.beta_inter_us_per_byte / host_nics : 0.0;
  return c;
}

double rel(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-12}); }

double whole(const coll::Algorithm& a, const RankLayout& l, std::size_t count, const coll::AlgoOptions& o,
             const coll::LevelCosts& c) {
  return price_schedule(*coll::open_schedule(a.id, l, count, o), l, 4, c);
}

// Random counts from a few elements to ~10^8, and chunks that hold the whole piece.
std::vector<std::size_t> random_counts(std::mt19937_64& rng, int n) {
  std::vector<std::size_t> out;
  for (int i = 0; i < n; ++i) out.push_back(1 + rng() % (std::size_t{1} << (4 + rng() % 23)));
  return out;
}

TEST(PipelineClosedForm, SingleRoundPipelinesEqualTheWholePrice) {
  std::vector<RankLayout> layouts;
  for (int p : {2, 3, 7, 16}) layouts.push_back(RankLayout::single_host(p));
  for (auto [h, l] : {std::pair{2, 4}, {3, 3}, {8, 2}, {4, 8}}) layouts.push_back(RankLayout::uniform(h, l));
  std::mt19937_64 rng(7);
  const FamilyCounts before = family_counts();
  int cases = 0;
  for (const coll::Algorithm& a : coll::algorithms()) {
    if (!a.pipeline_pieces) continue;
    for (const RankLayout& l : layouts) {
      for (bool separate : {false, true}) {
        for (double nics : {0.0, 1.0}) {
          if ((separate || nics > 0) && l.nhosts() == 1) continue;
          const coll::LevelCosts c = test_costs(separate, nics);
          for (std::size_t chunk : {std::size_t{0}, std::size_t{1} << 26}) {
            coll::AlgoOptions o;
            o.chunk_elems = chunk;
            for (std::size_t count : random_counts(rng, 6)) {
              if (a.not_applicable && a.not_applicable(l, count, o)) continue;
              SCOPED_TRACE(a.id + " p=" + std::to_string(l.nranks()) + " hosts=" + std::to_string(l.nhosts()) +
                           " count=" + std::to_string(count) + " chunk=" + std::to_string(chunk));
              EXPECT_LT(rel(hint_or_price(a, l, count * 4, 4, o, c), whole(a, l, count, o, c)), 1e-12);
              ++cases;
            }
          }
        }
      }
    }
  }
  const FamilyCounts after = family_counts();
  EXPECT_GT(cases, 200);
  // The closed forms answered (nccl_nvls without a chunk is not a family: priced whole).
  EXPECT_GT(after.from_closed_form - before.from_closed_form, static_cast<std::size_t>(cases) / 2);
}

// The tune's case in small: one run of dbtree and nccl_tree without chunks on a DGX cluster
// answers every buffer size, each equal to its whole price.
TEST(PipelineClosedForm, OneRunAnswersEveryUnchunkedSizeOnACluster) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=4");
  const CostModel model(t);
  std::mt19937_64 rng(3);
  for (const char* id : {"dbtree", "nccl_tree"}) {
    const coll::Algorithm& a = coll::find_algorithm(id);
    const coll::AlgoOptions o = model.options_for(a, {});
    const FamilyCounts before = family_counts();
    const std::vector<std::size_t> counts = random_counts(rng, 40);
    for (std::size_t count : counts) {
      const std::size_t n = count * a.pipeline_pieces(model.layout, o);  // remainder 0: one family
      EXPECT_LT(rel(hint_or_price(a, model.layout, n * 4, 4, o, model.levels), whole(a, model.layout, n, o, model.levels)),
                1e-12)
          << id << " count=" << n;
    }
    const FamilyCounts after = family_counts();
    EXPECT_LE(after.parametric_runs - before.parametric_runs, 4u) << id;
  }
}

// A price is the same whatever was priced before it (the pieces come from canonical points, not
// from the requests), so a tune, a simulate and two threads print the same number.
TEST(PipelineClosedForm, APriceDoesNotDependOnWhatWasPricedBefore) {
  const RankLayout l = RankLayout::uniform(4, 4);
  const coll::Algorithm& a = coll::find_algorithm("dbtree");
  std::mt19937_64 rng(11);
  const std::vector<std::size_t> counts = random_counts(rng, 30);
  // Two machines that price alike but are kept apart (a switch's rate with no switch): each
  // starts with nothing known, and their sizes are priced in opposite orders.
  coll::LevelCosts forward_costs = test_costs(true, 1.0);
  forward_costs.switch_gamma_us_per_byte = 1e-3;
  coll::LevelCosts backward_costs = forward_costs;
  backward_costs.switch_gamma_us_per_byte = 2e-3;
  std::vector<double> forward;
  for (std::size_t n : counts) forward.push_back(hint_or_price(a, l, n * 4, 4, {}, forward_costs));
  std::vector<double> backward(counts.size());
  for (std::size_t i = counts.size(); i-- > 0;) backward[i] = hint_or_price(a, l, counts[i] * 4, 4, {}, backward_costs);
  EXPECT_EQ(forward, backward);
}

// A family whose schedules are not one affine function of the size (nccl_nvls without a chunk
// picks its chunk from the size) is priced whole, and still right.
TEST(PipelineClosedForm, ANonAffineFamilyIsPricedWhole) {
  const coll::Algorithm& a = coll::find_algorithm("nccl_nvls");
  const topo::Topology t = topo::with_nvls_switch(topo::load_topology("dgx-h100"));
  const CostModel model(t);
  const FamilyCounts before = family_counts();
  for (std::size_t mib : {1, 3, 17, 64}) {
    const std::size_t bytes = mib * (std::size_t{1} << 20);
    const coll::AlgoOptions o = model.options_for(a, {});
    EXPECT_LT(rel(hint_or_price(a, model.layout, bytes, 4, o, model.levels),
                  whole(a, model.layout, bytes / 4, o, model.levels)),
              1e-12);
  }
  const FamilyCounts after = family_counts();
  EXPECT_EQ(after.from_closed_form, before.from_closed_form);
  EXPECT_GE(after.whole_pricings - before.whole_pricings, 4u);
}

}  // namespace
}  // namespace colltune::sim
