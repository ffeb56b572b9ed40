// The analytical cost model: level derivation from topology routes, the textbook formulas on
// the flat alpha-beta machine (docs/design.md "Units and metrics"), fp16 compression, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/pricer.hpp"
#include "colltune/topology/topology.hpp"
#include "test_machines.hpp"

namespace colltune::sim {
namespace {

constexpr double kAlpha = 5.0;                   // us
constexpr double kBeta = 1.0 / (12.5 * 1e3);     // us per byte at 12.5 GB/s
constexpr double kGamma = 1.0 / (50.0 * 1e3);    // us per byte at 50 GB/s

topo::Topology flat(int p, int nodes = 1) {
  return topo::load_topology("flat:ranks=" + std::to_string(p) + ",alpha=5,bw=12.5,reduce=50,nodes=" +
                             std::to_string(nodes));
}

double priced(const CostModel& model, const std::string& algo, std::size_t bytes) {
  CollectiveRequest req;
  req.algorithm = algo;
  req.bytes = bytes;
  return model.time_us(req);
}

int ceil_lg(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

// n divisible by p and by 4 for every p tested.
constexpr std::size_t kBytes = 16 * 7 * 4 * 4096;

TEST(CostModelLevels, FlatGivesItsAlphaBetaGamma) {
  for (int nodes : {1, 2}) {
    const CostModel model(flat(8, nodes));
    EXPECT_DOUBLE_EQ(model.levels.alpha_intra_us, kAlpha);
    EXPECT_DOUBLE_EQ(model.levels.alpha_inter_us, kAlpha);
    EXPECT_DOUBLE_EQ(model.levels.beta_intra_us_per_byte, kBeta);
    EXPECT_DOUBLE_EQ(model.levels.beta_inter_us_per_byte, kBeta);
    EXPECT_DOUBLE_EQ(model.levels.gamma_us_per_byte, kGamma);
    EXPECT_EQ(model.layout.nhosts(), nodes);
  }
}

TEST(CostModelLevels, DgxInterHostIsSlowerThanNvlink) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const CostModel model(t);
  // NVLink4 through the NVSwitch (450 GB/s) inside; one 400 Gb/s NIC (50 GB/s) between hosts.
  EXPECT_NEAR(model.levels.beta_intra_us_per_byte, 1.0 / 450e3, 1e-12);
  EXPECT_NEAR(model.levels.beta_inter_us_per_byte, 1.0 / 50e3, 1e-12);
  EXPECT_GT(model.levels.alpha_inter_us, model.levels.alpha_intra_us);
  EXPECT_EQ(model.layout.nhosts(), 2);
  EXPECT_EQ(model.layout.nranks(), 16);
}

TEST(CostModelLevels, PortsPerLevelWhereNvlinkAndNicAreSeparateLinks) {
  EXPECT_TRUE(CostModel(topo::load_topology("dgx-h100:nodes=2")).levels.separate_level_ports);
  EXPECT_TRUE(CostModel(topo::load_topology("fat-tree:nodes=2,gpus=4,nics=4")).levels.separate_level_ports);
  EXPECT_FALSE(CostModel(topo::load_topology("flat:ranks=12,nodes=3")).levels.separate_level_ports);  // one link per rank
  EXPECT_FALSE(CostModel(topo::load_topology("dgx-h100")).levels.separate_level_ports);  // one host
}

TEST(CostModelLevels, SubsetOfRanksAndTooFewRanks) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  EXPECT_EQ(CostModel(t, 8).layout.nhosts(), 1);
  EXPECT_EQ(CostModel(t, 9).layout.nhosts(), 2);
  EXPECT_THROW(CostModel(t, 17), Error);
  EXPECT_THROW(CostModel(t, 0), Error);
}

TEST(CostModelLevels, LayoutIsTheTopologysOwnAndItsPrefixes) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  EXPECT_EQ(CostModel(t).layout, t.rank_layout());
  // Ranks listed against host order, and one rank on a device outside every host.
  topo::Topology odd;
  const int h0 = odd.add_host("h0");
  const int h1 = odd.add_host("h1");
  const topo::VertexId sw = odd.add_device({"sw", topo::DeviceKind::net_switch, -1, 0});
  for (int r = 0; r < 5; ++r) {
    const int host = r < 2 ? h1 : r < 4 ? h0 : -1;
    const topo::VertexId v = odd.add_device({"gpu" + std::to_string(r), topo::DeviceKind::gpu, host, 50});
    odd.add_duplex_link(v, sw, topo::LinkKind::net, 10, 1);
    odd.map_rank(r, v);
  }
  odd.validate();
  EXPECT_EQ(CostModel(odd).layout, odd.rank_layout());
  EXPECT_EQ(CostModel(odd, 5).layout, RankLayout({1, 1, 0, 0, 2}));
  EXPECT_EQ(CostModel(odd, 3).layout, RankLayout({1, 1, 0}));
  EXPECT_EQ(CostModel(odd, 2).layout, RankLayout({0, 0}));
  // NCCL's model does not describe a rank outside every host: nccl_ring keeps its own channels.
  EXPECT_TRUE(CostModel(odd).nccl_ring_orders.empty());
}

class Textbook : public ::testing::TestWithParam<int> {};

TEST_P(Textbook, Ring) {
  const int p = GetParam();
  const CostModel model(flat(p));
  const double n = kBytes;
  const double expect = 2.0 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n * kBeta + double(p - 1) / p * n * kGamma;
  EXPECT_NEAR(priced(model, "ring", kBytes), expect, expect * 1e-3);
}

TEST_P(Textbook, BinomialTree) {
  const int p = GetParam();
  const CostModel model(flat(p));
  const double n = kBytes;
  const double lg = ceil_lg(p);
  const double expect = 2.0 * lg * kAlpha + 2.0 * n * lg * kBeta + n * lg * kGamma;
  EXPECT_NEAR(priced(model, "tree", kBytes), expect, expect * 1e-3);
}

TEST(TextbookRhd, HalvingDoublingPowerOfTwo) {
  for (int p : {2, 4, 8, 16}) {
    const CostModel model(flat(p));
    const double n = kBytes;
    const double lg = ceil_lg(p);
    const double expect = 2.0 * lg * kAlpha + 2.0 * (p - 1) / p * n * kBeta + double(p - 1) / p * n * kGamma;
    EXPECT_NEAR(priced(model, "rhd", kBytes), expect, expect * 1e-3) << "p=" << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Flat, Textbook, ::testing::Values(2, 4, 7, 8, 16));

TEST(CostModel, LowerBoundsHoldForEveryAlgorithm) {
  for (int p : {7, 8, 16}) {
    const CostModel model(flat(p));
    const double n = kBytes;
    const double bound = ceil_lg(p) * kAlpha + 2.0 * (p - 1) / p * n * kBeta + double(p - 1) / p * n * kGamma;
    for (const coll::Algorithm& algo : coll::algorithms()) {
      if (algo.collective != coll::Collective::allreduce) continue;
      const double t = priced(model, algo.id, kBytes);
      if (std::isinf(t)) continue;
      EXPECT_GE(t, bound * (1 - 1e-9)) << algo.id << " p=" << p;
    }
  }
}

TEST(CostModel, Fp16CompressionHalvesTheWireAndAddsCasts) {
  const CostModel model(flat(8));
  CollectiveRequest req;
  req.bytes = kBytes;
  req.fp16_compress = true;
  CollectiveRequest half;
  half.bytes = kBytes / 2;
  half.elem_size = 2;
  EXPECT_DOUBLE_EQ(model.cast_us_per_byte, kGamma);
  EXPECT_NEAR(model.time_us(req), model.time_us(half) + 2.0 * kBytes * kGamma, 1e-9);
  // Compression applies to 4-byte elements only.
  CollectiveRequest f64 = req;
  f64.elem_size = 8;
  CollectiveRequest plain64 = f64;
  plain64.fp16_compress = false;
  EXPECT_DOUBLE_EQ(model.time_us(f64), model.time_us(plain64));
}

TEST(CostModel, BadRequests) {
  const CostModel model(flat(4));
  EXPECT_THROW(priced(model, "no-such-algorithm", 1024), Error);
  CollectiveRequest odd;
  odd.bytes = 1023;  // not whole fp32 elements
  EXPECT_THROW(model.time_us(odd), Error);
  CollectiveRequest zero_elem;
  zero_elem.elem_size = 0;
  EXPECT_THROW(model.time_us(zero_elem), Error);
}

TEST(CostModel, GrowsWithSizeAndLatency) {
  const CostModel model(flat(8));
  EXPECT_LT(priced(model, "ring", 1 * MiB), priced(model, "ring", 64 * MiB));
  const CostModel slow(topo::load_topology("flat:ranks=8,alpha=50,bw=12.5"));
  EXPECT_LT(priced(model, "ring", 4 * KiB), priced(slow, "ring", 4 * KiB));
}

// dbtree's chunked pipeline has no closed form: price_pipeline prices it and keeps the schedules
// it priced. A repeated request gets the first answer, never a neighbour's: every knob of the
// request and the level costs are in the memo's key.
TEST(CostModel, RepeatedPipelineRequestsComeFromTheMemoUnchanged) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  CostModel model(t);
  CollectiveRequest req;
  req.algorithm = "dbtree";
  req.bytes = 3 * MiB + 4096;
  req.options.chunk_elems = 16 * 1024;
  const double direct = hint_or_price(coll::find_algorithm("dbtree"), model.layout, req.bytes, 4,
                                      model.options_for(coll::find_algorithm("dbtree"), req.options), model.levels);
  EXPECT_EQ(model.time_us(req), direct);
  EXPECT_EQ(model.time_us(req), direct);  // from the memo
  // Each knob changes the answer, so each must be in the key.
  CollectiveRequest other = req;
  other.options.chunk_elems = 32 * 1024;
  EXPECT_NE(model.time_us(other), direct);
  other = req;
  other.bytes += 4096;
  EXPECT_NE(model.time_us(other), direct);
  other = req;
  other.fp16_compress = true;
  EXPECT_NE(model.time_us(other), direct);
  other = req;
  other.algorithm = "ring";
  EXPECT_NE(model.time_us(other), direct);
  other = req;
  other.algorithm = "hierarchical";
  other.options.inner = "rhd";
  const double rhd = model.time_us(other);
  other.options.inner = "ring";
  EXPECT_NE(model.time_us(other), rhd);
  // A model whose level costs change after a request prices the new machine.
  model.levels.beta_inter_us_per_byte *= 2;
  EXPECT_GT(model.time_us(req), direct);
  // A copy prices its own levels.
  CostModel copy = model;
  copy.levels.alpha_inter_us += 10;
  EXPECT_GT(copy.time_us(req), model.time_us(req));
}

// The pricer pairs each rank's messages per peer; a parameter server's one server talks to every
// worker, more peers than its short list holds (pricer_engine.hpp), and still pairs each push and
// pull with its own worker: W workers push n elements to it at once (one ejection port: W n
// beta), it sums W - 1 blocks into the first, and they pull (one injection port: W n beta).
TEST(Pricer, AServerWithManyPeersPairsEveryMessage) {
  for (int workers : {8, 24, 100}) {
    const RankLayout layout = RankLayout::single_host(workers + 1);
    coll::AlgoOptions o;
    o.ps_servers = 1;  // a dedicated server: the last rank
    coll::LevelCosts c;
    c.alpha_intra_us = c.alpha_inter_us = 2.0;
    c.beta_intra_us_per_byte = c.beta_inter_us_per_byte = 1e-3;
    c.gamma_us_per_byte = 1e-4;
    const std::size_t n = 1000;
    const double bytes = 4.0 * static_cast<double>(n);
    const double w = workers;
    const double expected = 2 * 2.0 + 2 * w * bytes * 1e-3 + (w - 1) * bytes * 1e-4;
    EXPECT_NEAR(price_schedule(*coll::open_schedule("ps", layout, n, o), layout, 4, c), expected, 1e-9 * expected)
        << workers << " workers";
  }
}

// The reference pricer moves copies of a message (a step's ops of one kind to one peer with
// blocks of one size) as one message that counts as that many at every port it shares. Two cases
// worked by hand on one host (alpha a, beta b, no reductions; B-byte blocks):
//  - rank 0 sends rank 1 three blocks in one step; rank 1 receives one in step 0 and two in step
//    1: the first alone (B b + a), the other two together from then (2 B b + a): 3 B b + 2 a;
//  - rank 0 sends two B blocks to rank 1 and a 2B block to rank 2 in one step: three messages
//    share rank 0's port, the B ones leave at 3 B b, the 2B one alone after that at 4 B b.
// Then real schedules with copies (NVLS's shards to the switch, nccl_tree's two trees along one
// chain) and without, priced both ways: the same numbers.
TEST(Pricer, CopiesOfAMessageMoveAsOne) {
  coll::LevelCosts c;
  c.alpha_intra_us = 1.5;
  c.beta_intra_us_per_byte = 1e-3;
  const std::size_t n = 1000;  // elements of 4 bytes: B b = 4 us
  const double bb = 4.0, a = 1.5;
  const RankLayout one_host = RankLayout::single_host(3);
  const auto step = [](std::vector<coll::Op> ops) { return coll::Step{std::move(ops)}; };
  using coll::Block;
  using coll::Op;
  using coll::OpKind;
  coll::Schedule parts;
  parts.algorithm = "copies_in_parts";
  parts.nranks = 3;
  parts.count = 3 * n;
  parts.ranks = {{step({Op(OpKind::send, 1, Block{0, n}), Op(OpKind::send, 1, Block{n, n}),
                        Op(OpKind::send, 1, Block{2 * n, n})})},
                 {step({Op(OpKind::recv_copy, 0, Block{0, n})}),
                  step({Op(OpKind::recv_copy, 0, Block{n, n}), Op(OpKind::recv_copy, 0, Block{2 * n, n})})},
                 {}};
  EXPECT_NEAR(price_schedule(coll::StoredSteps(parts), one_host, 4, c), 3 * bb + 2 * a, 1e-12);
  coll::Schedule shared;
  shared.algorithm = "copies_sharing_a_port";
  shared.nranks = 3;
  shared.count = 4 * n;
  shared.ranks = {{step({Op(OpKind::send, 1, Block{0, n}), Op(OpKind::send, 2, Block{n, 2 * n}),
                         Op(OpKind::send, 1, Block{3 * n, n})})},
                  {step({Op(OpKind::recv_copy, 0, Block{0, n}), Op(OpKind::recv_copy, 0, Block{3 * n, n})})},
                  {step({Op(OpKind::recv_copy, 0, Block{n, 2 * n})})}};
  EXPECT_NEAR(price_schedule(coll::StoredSteps(shared), one_host, 4, c), 4 * bb + a, 1e-12);
  for (const coll::Schedule* s : {&parts, &shared})
    EXPECT_EQ(price_schedule(coll::StoredSteps(*s), one_host, 4, c),
              price_schedule_op_by_op(coll::StoredSteps(*s), one_host, 4, c));

  struct Case {
    std::string machine;
    std::string algo;
    bool nvls_switch;
  };
  for (const Case& k : {Case{"dgx-h100:nodes=2", "nccl_nvls_tree", true}, Case{"dgx-h100", "nccl_nvls", true},
                        Case{"dgx-h100:nodes=4", "nccl_tree", false}, Case{"dgx-a100:nodes=3", "nccl_tree", false},
                        Case{"dgx-h100:nodes=4", "dbtree", false}, Case{"dgx-h100:nodes=2", "hierarchical", false},
                        Case{"fat-tree:nodes=8,oversub=4", "nccl_ring", false}}) {
    topo::Topology t = topo::load_topology(k.machine);
    if (k.nvls_switch) t = topo::with_nvls_switch(t);
    const CostModel m(t);
    const coll::Algorithm& alg = coll::find_algorithm(k.algo);
    for (std::size_t chunk : {std::size_t{0}, std::size_t{4096}}) {
      coll::AlgoOptions o;
      o.chunk_elems = chunk;
      o = m.options_for(alg, o);
      for (std::size_t count : {std::size_t{1} << 20, (std::size_t{1} << 20) + 77, std::size_t{999}}) {
        SCOPED_TRACE(k.algo + " on " + k.machine + " chunk " + std::to_string(chunk) + " count " +
                     std::to_string(count));
        if (alg.not_applicable(m.layout, count, o)) continue;
        const auto source = coll::open_schedule(alg.id, m.layout, count, o);
        const double moved = price_schedule(*source, m.layout, 4, m.levels);
        const double each = price_schedule_op_by_op(*source, m.layout, 4, m.levels);
        EXPECT_DOUBLE_EQ(moved, each);
      }
    }
  }
}

// Where turning every host's ranks by one place maps the schedule onto itself (nccl_tree over
// NCCL's rotated chain orders on DGX hosts; a ring on one host, every segment equal), the pricer
// runs each host's first rank only: the same numbers as every rank run, with the hosts' NICs
// shared, per-level ports and group trunks, with short last chunks too (nccl_tree orders each
// step's ops by chain place, which turning the ranks keeps). dbtree (one tree over all ranks), a
// ring with uneven segments, and nccl_tree over DGX A100's chain orders (not one chain rotated)
// are run whole.
TEST(Pricer, HostsWhoseRanksTakeTurnsRunTheirFirstRankOnly) {
  struct Case {
    std::string machine;
    std::string algo;
    std::size_t count;
    bool folds;          // unchunked
    bool folds_chunked;  // in chunks of 16384
  };
  for (const Case& k : {Case{"dgx-h100:nodes=4", "nccl_tree", std::size_t{1} << 20, true, true},
                        Case{"dgx-h100:nodes=4", "nccl_tree", (std::size_t{1} << 20) + 16 * 3, true, true},
                        Case{"dgx-h100:nodes=4", "nccl_tree", (std::size_t{1} << 20) + 77, false, false},
                        Case{"dgx-a100:nodes=3", "nccl_tree", std::size_t{1} << 20, false, false},
                        Case{"fat-tree:nodes=8,oversub=4", "nccl_tree", std::size_t{1} << 20, true, true},
                        Case{"dgx-h100", "ring", std::size_t{1} << 20, true, true},
                        Case{"dgx-h100", "ring", (std::size_t{1} << 20) + 3, false, false},
                        Case{"dgx-h100:nodes=4", "dbtree", std::size_t{1} << 20, false, false}}) {
    const topo::Topology t = topo::load_topology(k.machine);
    const CostModel m(t);
    const coll::Algorithm& alg = coll::find_algorithm(k.algo);
    for (std::size_t chunk : {std::size_t{0}, std::size_t{16384}}) {
      SCOPED_TRACE(k.algo + " on " + k.machine + " count " + std::to_string(k.count) + " chunk " +
                   std::to_string(chunk));
      coll::AlgoOptions o;
      o.chunk_elems = chunk;
      o = m.options_for(alg, o);
      coll::LevelCosts c = m.levels;
      for (bool nics : {false, true}) {
        c.beta_host_us_per_byte = nics ? c.beta_inter_us_per_byte : 0.0;
        const auto source = coll::open_schedule(alg.id, m.layout, k.count, o);
        const std::size_t before = folded_pricer_runs();
        const double folded = price_schedule(*source, m.layout, 4, c);
        EXPECT_EQ(folded_pricer_runs() - before, (chunk == 0 ? k.folds : k.folds_chunked) ? 1U : 0U);
        EXPECT_DOUBLE_EQ(folded, price_schedule_op_by_op(*source, m.layout, 4, c));
      }
    }
  }
}

// Where dbtree's second tree is its first read from the other end (an even rank and element
// count) and the machine looks the same from both ends, the pricer runs the lower half of the
// ranks: the same numbers as every rank run, with the hosts' NICs shared or not, per-level ports,
// trunks and near groups, short last chunks too (on 4 ranks, rank 1 sends rank 2 a full chunk in
// one tree and the short last one in the other in one step: paired in the wrong order, the run
// throws). Not where a host (an odd host count) or a trunk's
// group of hosts (three leaves) spans the middle, where the near groups do not map onto one
// another (a leaf of four hosts and one of two), nor on an odd count.
TEST(Pricer, AScheduleReadAlikeFromTheOtherEndRunsHalfItsRanks) {
  struct Case {
    std::string machine;
    std::size_t count;
    bool mirrors;
    std::size_t chunk = 16384;
  };
  for (const Case& k : {Case{"dgx-h100:nodes=4", std::size_t{1} << 20, true},
                        Case{"dgx-h100:nodes=4", (std::size_t{1} << 20) + 10, true},
                        Case{"dgx-h100:nodes=4", (std::size_t{1} << 20) + 1, false},
                        Case{"dgx-h100:nodes=3", std::size_t{1} << 20, false},
                        Case{"fat-tree:nodes=8,oversub=4", (std::size_t{1} << 20) + 6, true},
                        Case{"fat-tree:nodes=12,gpus=2,nics=1,oversub=2,leaf_ports=4", std::size_t{1} << 20, false},
                        Case{"dgx-a100:nodes=10,leaf_ports=16", (std::size_t{1} << 20) + 2, true},
                        Case{"dgx-a100:nodes=6,leaf_ports=32", std::size_t{1} << 20, false},
                        Case{"flat:ranks=10", 1000, true}, Case{"flat:ranks=4", 12134, true, 100}}) {
    const topo::Topology t = topo::load_topology(k.machine);
    const CostModel m(t);
    for (std::size_t chunk : {std::size_t{0}, k.chunk}) {
      SCOPED_TRACE(k.machine + " count " + std::to_string(k.count) + " chunk " + std::to_string(chunk));
      coll::AlgoOptions o;
      o.chunk_elems = chunk;
      coll::LevelCosts c = m.levels;
      for (bool nics : {false, true}) {
        c.beta_host_us_per_byte = nics ? c.beta_inter_us_per_byte : 0.0;
        const auto source = coll::open_schedule("dbtree", m.layout, k.count, o);
        const std::size_t before = mirrored_pricer_runs();
        const double mirrored = price_schedule(*source, m.layout, 4, c);
        EXPECT_EQ(mirrored_pricer_runs() - before, k.mirrors ? 1U : 0U);
        EXPECT_DOUBLE_EQ(mirrored, price_schedule_op_by_op(*source, m.layout, 4, c));
      }
    }
  }
}

// nccl_tree proves the fold's symmetry on its channels (StepSource::turns_with_hosts) instead
// of the pricer comparing every rank's ops with its host's first rank's: the proof must say what
// the comparison says. Over hosts of 2 to 8 GPUs, chain orders of every kind (NCCL's rotated
// default, every rotation of a shuffled chain, some rotations only, a chain and its reverse as on
// DGX A100, one chain twice), both tree patterns, even and uneven segments, chunked or not: the
// generated schedule declares the symmetry only where the pricer finds it in the same schedule
// stored (which it compares op by op), everywhere it does on three GPUs a host or more, and
// both price the same to the last bit.
TEST(Pricer, NcclTreesProofOfTheTurnIsWhatTheOpsSay) {
  std::vector<std::vector<std::vector<int>>> orders_of;
  const auto rotations = [](std::vector<int> chain, std::size_t how_many) {
    std::vector<std::vector<int>> out;
    for (std::size_t i = 0; i < how_many; ++i) {
      out.push_back(chain);
      std::rotate(chain.begin(), chain.begin() + 1, chain.end());
    }
    return out;
  };
  std::size_t declared = 0, cases = 0;
  for (int per_host : {2, 3, 4, 8}) {
    std::vector<int> chain(static_cast<std::size_t>(per_host));
    for (int i = 0; i < per_host; ++i) chain[static_cast<std::size_t>(i)] = (i * 3 + 1) % per_host;
    if (per_host % 3 == 0) std::iota(chain.begin(), chain.end(), 0);
    std::vector<int> reversed(chain.rbegin(), chain.rend());
    const std::vector<std::vector<std::vector<int>>> orders = {{},  // nccl_orders' default
                                                               rotations(chain, static_cast<std::size_t>(per_host)),
                                                               rotations(chain, static_cast<std::size_t>(per_host) / 2),
                                                               {chain, reversed},
                                                               {chain, chain}};
    for (int hosts : {1, 2, 3, 5}) {
      const RankLayout layout = RankLayout::uniform(hosts, per_host);
      const coll::LevelCosts c = test_machines::test_costs(true, 1.0);  // per-level ports, shared NICs
      for (std::size_t o_i = 0; o_i < orders.size(); ++o_i)
        for (bool simple : {false, true})
          for (std::size_t chunk : {std::size_t{0}, std::size_t{64}})
            for (std::size_t extra : {std::size_t{0}, std::size_t{1}, std::size_t{77}}) {
              coll::AlgoOptions o;
              o.channel_orders = orders[o_i];
              o.nccl_simple_tree = simple;
              o.chunk_elems = chunk;
              if (coll::find_algorithm("nccl_tree").not_applicable(layout, 1, o)) continue;
              const auto pieces = static_cast<std::size_t>(coll::algo::nccl_tree_channels(layout, o));
              const std::size_t count = 256 * pieces + extra * (extra == 1 ? pieces / 2 : 1);
              SCOPED_TRACE(std::to_string(hosts) + " hosts of " + std::to_string(per_host) + ", orders " +
                           std::to_string(o_i) + (simple ? " TREE" : " BALANCED_TREE") + ", chunk " +
                           std::to_string(chunk) + ", count " + std::to_string(count));
              const auto generated = coll::open_schedule("nccl_tree", layout, count, o);
              const coll::StoredSteps stored(coll::materialize(*generated));
              const bool proven = generated->turns_with_hosts(layout);
              const std::size_t before = folded_pricer_runs();
              const double from_stored = price_schedule(stored, layout, 4, c);
              const bool compared = folded_pricer_runs() > before;
              EXPECT_TRUE(compared || !proven) << "proven where the ops are not turned";
              // Two GPUs a host: each is the other's successor, both ways; the chains keep the
              // channels' order and the proof is left to the comparison (which finds the turn
              // in unchunked schedules).
              if (per_host >= 3) {
                EXPECT_EQ(proven, compared);
              }
              EXPECT_EQ(price_schedule(*generated, layout, 4, c), from_stored);
              EXPECT_FALSE(generated->turns_with_hosts(RankLayout::uniform(per_host, hosts)) && hosts != per_host);
              declared += proven ? 1 : 0;
              ++cases;
            }
    }
  }
  EXPECT_GT(declared, cases / 8) << "the proof holds where NCCL's rotated chains fold";
  EXPECT_LT(declared, cases);
}

// NVLS-Tree's hosts take turns around their NVSwitches: turning every host's GPUs maps the
// schedule onto itself with each switch staying put, so the pricer runs each host's first GPU and
// its switch (pricer_engine.hpp). The source proves it (equal segments in equal chunks) exactly
// where the pricer, comparing the stored schedule's ops, finds it; the two, and every rank run op
// by op, give one price to the last bit. Over 1 to 5 hosts of 2 to 8 GPUs, with and without
// chunks, even, uneven and short-last-chunk counts, shared NICs and per-level ports. A switch
// whose sums take time is not folded (it copies GPU 0's block and reduces the others'): priced
// whole, to the same number as op by op.
TEST(Pricer, NvlsTreeHostsTurnAroundTheirSwitches) {
  std::size_t declared = 0, cases = 0;
  for (int per_host : {2, 3, 4, 8})
    for (int hosts : {1, 2, 3, 5}) {
      std::vector<int> host_of;
      for (int h = 0; h < hosts; ++h)
        for (int g = 0; g < per_host; ++g) host_of.push_back(h);
      for (int h = 0; h < hosts; ++h) host_of.push_back(h);  // the switches, last, in host order
      const RankLayout layout(host_of);
      coll::LevelCosts c = test_machines::test_costs(true, 1.0);
      c.switch_helpers = true;
      c.switch_alpha_us = 0.5;
      for (double switch_gamma : {0.0, 2e-5})
        for (std::size_t chunk : {std::size_t{0}, std::size_t{64}, std::size_t{48}})
          for (std::size_t extra : {std::size_t{0}, std::size_t{1}, std::size_t{77}}) {
            c.switch_gamma_us_per_byte = switch_gamma;
            coll::AlgoOptions o;
            o.chunk_elems = chunk;
            const auto segments = static_cast<std::size_t>(2 * per_host);
            const std::size_t count = 256 * segments + extra;
            SCOPED_TRACE(std::to_string(hosts) + " hosts of " + std::to_string(per_host) + ", switch gamma " +
                         std::to_string(switch_gamma) + ", chunk " + std::to_string(chunk) + ", count " +
                         std::to_string(count));
            const auto generated = coll::open_schedule("nccl_nvls_tree", layout, count, o);
            const coll::StoredSteps stored(coll::materialize(*generated));
            const bool proven = generated->turns_with_hosts(layout);
            EXPECT_EQ(proven, extra == 0 && chunk != 48);  // 256 elements a segment: 48 leaves a short chunk
            std::size_t before = folded_pricer_runs();
            const double from_stored = price_schedule(stored, layout, 4, c);
            const bool compared = folded_pricer_runs() > before;
            before = folded_pricer_runs();
            const double from_generated = price_schedule(*generated, layout, 4, c);
            const bool by_proof = folded_pricer_runs() > before;
            EXPECT_EQ(compared, proven && switch_gamma == 0);
            EXPECT_EQ(by_proof, compared);
            EXPECT_EQ(from_generated, from_stored);
            EXPECT_DOUBLE_EQ(from_stored, price_schedule_op_by_op(stored, layout, 4, c));
            declared += by_proof ? 1 : 0;
            ++cases;
          }
    }
  EXPECT_EQ(declared, cases / 9);  // free sums, equal segments, equal chunks: a ninth of the cases
}

// A long pipeline is extended from short ones only once they have settled, and the cost of a
// round can hold still before that (sim/analytic/src/steady_rounds.hpp). Two machines where it
// does: a chunked dbtree on flat:ranks=512 (rounds 4 to 10 cost the same, settled at 19)
// and NVLS-Tree on 16 H100 hosts (equal rounds at 4 and 5, settled at 8). Extending from the
// first two equal rounds would be 8% off on the first; price_pipeline is the whole price's to
// 1e-9 on both, with uneven last chunks, and a second request with other last chunks reuses
// the settled probe (two short runs, no new search).
struct Transient {
  std::string machine;
  std::string algo;
  bool nvls_switch;
  std::size_t chunk;
  std::size_t held;  // rounds h: the h-th and (h+1)-th rounds cost the same, the (h+2)-th not
};

TEST(PricePipeline, ExtendsOnlyPastTheTransients) {
  for (const Transient& k : {Transient{"flat:ranks=512", "dbtree", false, 4096, 9},
                             Transient{"dgx-h100:nodes=16", "nccl_nvls_tree", true, 131072, 4}}) {
    SCOPED_TRACE(k.algo + " on " + k.machine);
    topo::Topology t = topo::load_topology(k.machine);
    if (k.nvls_switch) t = topo::with_nvls_switch(t);
    const CostModel m(t);
    const coll::Algorithm& a = coll::find_algorithm(k.algo);
    coll::AlgoOptions o;
    o.chunk_elems = k.chunk;
    o = m.options_for(a, o);
    const std::size_t unit = a.pipeline_pieces(m.layout, o) * o.chunk_elems;
    const auto whole = [&](std::size_t count) {
      return price_schedule(*coll::open_schedule(a.id, m.layout, count, o), m.layout, 4, m.levels);
    };
    // The transient: two equal rounds, then a different one.
    const std::size_t h = k.held;
    const double d1 = whole((h + 1) * unit) - whole(h * unit);
    const double d0 = whole(h * unit) - whole((h - 1) * unit);
    const double d2 = whole((h + 2) * unit) - whole((h + 1) * unit);
    EXPECT_NEAR(d1 / d0, 1.0, 1e-10);
    EXPECT_GT(std::abs(d2 / d1 - 1.0), 0.01);
    for (std::size_t last : {std::size_t{1234}, unit / 3}) {
      const std::size_t count = 80 * unit + last;
      const std::size_t probes = steady_round_probes();
      bool extrapolated = false;
      const double fast = price_pipeline(a, m.layout, count, 4, o, m.levels, &extrapolated);
      EXPECT_TRUE(extrapolated);
      EXPECT_NEAR(fast / whole(count), 1.0, 1e-9) << "last chunks " << last;
      if (last != 1234) {
        EXPECT_EQ(steady_round_probes(), probes) << "the settled probe is the pipeline's";
      }
    }
  }
}

// The settled probe is the first of a fixed sequence, found by whichever request gets there first,
// and a request extends from it only where its own search would have reached it: prices are the
// same bits whatever was priced before (and after forget_prices, as in a fresh process). Long
// requests first, then shorter ones with other last chunks; then the reverse. On two DGX hosts
// (16 ranks: a window of 8 rounds) a dbtree settles at 4 rounds, and an 11-round request could
// reuse that probe (two runs of 4 and 5 rounds) but could not have found it (4 + 8 + 1 rounds):
// it is priced whole in either order. On flat:ranks=512 a dbtree settles only at round 19:
// probes at 4, 8 and 16 rounds fail.
TEST(PricePipeline, APriceDoesNotDependOnWhatWasPricedBefore) {
  struct Case {
    std::string machine;
    std::size_t chunk;
    std::vector<std::size_t> rounds;  // with last chunks of 17, unit / 3, 5 and 0, in turn
  };
  for (const Case& k : {Case{"dgx-h100:nodes=2", 2048, {200, 40, 12, 11}}, Case{"flat:ranks=512", 4096, {100, 70, 40, 66}}}) {
    SCOPED_TRACE(k.machine);
    const CostModel m(topo::load_topology(k.machine));
    const coll::Algorithm& a = coll::find_algorithm("dbtree");
    coll::AlgoOptions o;
    o.chunk_elems = k.chunk;
    const std::size_t unit = a.pipeline_pieces(m.layout, o) * o.chunk_elems;
    const std::vector<std::size_t> last = {17, unit / 3, 5, 0};
    const auto price_all = [&](bool reversed) {
      forget_prices();
      std::vector<double> out(k.rounds.size());
      for (std::size_t j = 0; j < k.rounds.size(); ++j) {
        const std::size_t i = reversed ? k.rounds.size() - 1 - j : j;
        out[i] = price_pipeline(a, m.layout, k.rounds[i] * unit + last[i], 4, o, m.levels);
      }
      return out;
    };
    const std::vector<double> forward = price_all(false);
    const std::vector<double> backward = price_all(true);
    for (std::size_t i = 0; i < k.rounds.size(); ++i) EXPECT_EQ(forward[i], backward[i]) << k.rounds[i] << " rounds";
  }
}

// A search may begin at the window (PipelineProbes::from_window, NcclPricer's sizes that double)
// instead of at 4 rounds: a dbtree on two DGX hosts (16 ranks, a window of 8) settles at 4, so a
// 15-round request is extended from 4 (4 + 8 + 1 < 15) but priced whole from the window (8 + 8 +
// 1 rounds would not pay), with no probe run; a 40-round one is extended from the probe at 8.
// Either way the price is the whole's to 1e-9, and each search keeps its own settled probe.
TEST(PricePipeline, ASearchFromTheWindowRunsNoProbeBelowIt) {
  const CostModel m(topo::load_topology("dgx-h100:nodes=2"));
  const coll::Algorithm& a = coll::find_algorithm("dbtree");
  coll::AlgoOptions o;
  o.chunk_elems = 2048;
  const std::size_t unit = a.pipeline_pieces(m.layout, o) * o.chunk_elems;
  const auto whole = [&](std::size_t count) {
    return price_schedule(*coll::open_schedule(a.id, m.layout, count, o), m.layout, 4, m.levels);
  };
  const auto price = [&](std::size_t count, PipelineProbes probes, bool& extrapolated) {
    return price_pipeline(a, m.layout, count, 4, o, m.levels, &extrapolated, probes);
  };
  forget_prices();
  const std::size_t count15 = 15 * unit + 17;
  bool extrapolated = false;
  std::size_t probes = steady_round_probes();
  EXPECT_NEAR(price(count15, PipelineProbes::from_window, extrapolated) / whole(count15), 1.0, 1e-9);
  EXPECT_FALSE(extrapolated);
  EXPECT_EQ(steady_round_probes(), probes) << "no probe below the window";
  EXPECT_NEAR(price(count15, PipelineProbes::from_four_rounds, extrapolated) / whole(count15), 1.0, 1e-9);
  EXPECT_TRUE(extrapolated);
  EXPECT_EQ(steady_round_probes(), probes + 1) << "settled at the first probe, 4 rounds";
  const std::size_t count40 = 40 * unit + 17;
  probes = steady_round_probes();
  EXPECT_NEAR(price(count40, PipelineProbes::from_window, extrapolated) / whole(count40), 1.0, 1e-9);
  EXPECT_TRUE(extrapolated);
  EXPECT_EQ(steady_round_probes(), probes + 1) << "its own search: one probe, at 8 rounds";
}

}  // namespace
}  // namespace colltune::sim
