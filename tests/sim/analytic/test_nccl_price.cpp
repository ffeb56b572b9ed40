// The NCCL price path (sim/nccl_price.hpp): NCCL's pick from NCCL's model, priced by the pick's
// colltune schedule with the protocol's latency and efficiency; NCCL's own time, said so, where
// colltune has no schedule; the machine as measured for the pick.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/calibration.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/nccl_price.hpp"
#include "colltune/sim/pricer.hpp"
#include "colltune/topology/topology.hpp"

namespace {

using namespace colltune;
using namespace colltune::sim;

constexpr auto AR = NcclColl::allreduce;

NcclPricer pricer(const topo::Topology& t, NcclOptions o = {}, ProtocolEfficiency e = {}) {
  return NcclPricer(t, t, o, e);
}

TEST(NcclPrice, TheRolesStayApart) {
  // The pick is NCCL's; its cell time NCCL's; the time colltune's schedule of it.
  const topo::Topology t = topo::load_topology("dgx-h100");
  const NcclPricer p = pricer(t);
  for (std::size_t bytes : {std::size_t{1024}, std::size_t{1} << 20, std::size_t{1} << 30}) {
    const NcclChoice nccl = p.model().choose(AR, bytes);
    const NcclPrice priced = p.price(AR, bytes);
    EXPECT_EQ(priced.nccl.algo, nccl.algo);
    EXPECT_EQ(priced.nccl.proto, nccl.proto);
    EXPECT_EQ(priced.nccl.channels, nccl.channels);
    EXPECT_EQ(priced.nccl.time_us, nccl.time_us);
    EXPECT_TRUE(priced.fallback.empty()) << priced.fallback;
    EXPECT_EQ(priced.schedule, nccl.algo == NcclAlgo::nvls ? "nccl_nvls" : "nccl_ring");
  }
}

// NCCL's kernels reduce what arrives as they forward it (one pass), so a reduction faster than
// the link costs nothing beyond the transfer, and a slower one only its excess. One DGX H100,
// Ring at 8 GiB: every rank sends 2(n-1)/n of the buffer over its NVLink (450 GB/s per
// direction on the topology as given) and reduces (n-1)/n of it.
TEST(NcclPrice, ReductionsRideOnTheTransfer) {
  topo::Topology t = topo::load_topology("dgx-h100");
  NcclOptions o;
  o.algo_env = "Ring";
  const std::size_t bytes = std::size_t{1} << 33;
  const double n = 8, link_gbps = 450;
  const double wire_us = 2 * (n - 1) / n * static_cast<double>(bytes) / (link_gbps * 1e3);
  const NcclPrice fast = pricer(t, o).price(AR, bytes);
  ASSERT_EQ(fast.schedule, "nccl_ring");
  EXPECT_NEAR(fast.time_us / wire_us, 1.0, 0.005);  // the GPU reduces at 1117 GB/s: hidden
  const double slow_gbps = 100;
  for (int r = 0; r < t.num_ranks(); ++r) t.set_reduce_gbps(t.device_of_rank(r), slow_gbps);
  const double excess_us = (n - 1) / n * static_cast<double>(bytes) * (1 / slow_gbps - 1 / link_gbps) / 1e3;
  EXPECT_NEAR(pricer(t, o).price(AR, bytes).time_us / (wire_us + excess_us), 1.0, 0.005);
}

// NCCL's channel settings change which links the rings run on, not NCCL's pick: with
// NCCL_MAX_NCHANNELS=4 two DGX H100s run their Ring on the first 4 search channels (4 of the 8
// NICs), about half the bandwidth; NCCL_MIN_CTAS=24 runs every channel three times, the same
// links; NCCL_MIN_NCHANNELS=20 runs four channels three times and four twice, slower than even.
TEST(NcclPrice, ChannelSettingsMoveTheRingsLinks) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const auto ring_us = [&](const char* setting) {
    NcclOptions o;
    o.algo_env = "Ring";
    if (*setting) set_nccl_channel_setting(o.channel_env, setting);
    const NcclPrice p = pricer(t, o).price(AR, std::size_t{1} << 30);
    EXPECT_EQ(p.nccl.algo, NcclAlgo::ring);
    return p.time_us;
  };
  const double plain = ring_us("");
  EXPECT_GT(ring_us("NCCL_MAX_NCHANNELS=4"), 1.6 * plain);
  EXPECT_NEAR(ring_us("NCCL_MIN_CTAS=24"), plain, 1e-9 * plain);
  const double twenty = ring_us("NCCL_MIN_NCHANNELS=20");
  EXPECT_GT(twenty, 1.05 * plain);
  EXPECT_LT(twenty, 1.2 * plain);
}

TEST(NcclPrice, LatencyIsNcclsStepsAtTheMachinesLatencyAndBandwidthTheSchedules) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  const NcclPricer p = pricer(t);
  const ProtocolCost ll = protocol_cost(p.model(), AR, NcclAlgo::ring, NcclProto::ll, {});
  // Ring/LL is the wire: no overhead per step; 2(16-1) steps, 2 of them across nodes.
  EXPECT_EQ(ll.hop_intra_us, 0);
  EXPECT_EQ(ll.hop_inter_us, 0);
  EXPECT_EQ(ll.intra_steps, 28);
  EXPECT_EQ(ll.inter_steps, 2);
  const ProtocolCost simple = protocol_cost(p.model(), AR, NcclAlgo::ring, NcclProto::simple, {});
  EXPECT_GT(simple.hop_inter_us, 0);  // Simple's fence and flush per step
  EXPECT_EQ(simple.efficiency, 1.0);
  // A 1-byte-per-rank call is all latency: NCCL's steps at the machine's alphas plus overheads.
  const CostModel machine(t);
  const double tiny = p.price(AR, NcclAlgo::ring, NcclProto::ll, 64).time_us;
  EXPECT_NEAR(tiny, latency_us(ll, machine.levels), 0.05 * tiny);
  EXPECT_DOUBLE_EQ(latency_us(ll, machine.levels),
                   ll.call_us + 28 * machine.levels.alpha_intra_us + 2 * machine.levels.alpha_inter_us);
}

TEST(NcclPrice, AProtocolsEfficiencyScalesItsBandwidthPart) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const std::size_t big = std::size_t{1} << 28;
  const NcclPricer nominal = pricer(t);
  const NcclPricer slower = pricer(t, {}, ProtocolEfficiency{0.25, 120.0 / 128});
  const ProtocolCost cost = protocol_cost(nominal.model(), AR, NcclAlgo::ring, NcclProto::ll, {});
  const CostModel machine(t);
  const double lat = latency_us(cost, machine.levels);
  const double a = nominal.price(AR, NcclAlgo::ring, NcclProto::ll, big).time_us - lat;
  const double b = slower.price(AR, NcclAlgo::ring, NcclProto::ll, big).time_us - lat;
  EXPECT_NEAR(b / a, 2.0, 0.02);  // half the payload per byte on the wire: twice the transfer time
  // Simple does not move.
  EXPECT_EQ(nominal.price(AR, NcclAlgo::ring, NcclProto::simple, big).time_us,
            slower.price(AR, NcclAlgo::ring, NcclProto::simple, big).time_us);
}

TEST(NcclPrice, NvlsTakesNcclsShareOfTheNvlinkRate) {
  const topo::Topology t = topo::load_topology("dgx-h100");
  NcclOptions v28;
  v28.version = NcclVersion::parse("2.28");
  const NcclPricer p = pricer(t, v28);
  // NCCL's nvlsEfficiency on Hopper x (nCh-1)/nCh, nCh the NVLS search's channels: one per GPU.
  const double fraction = p.model().nvls_link_fraction(NcclAlgo::nvls);
  ASSERT_EQ(p.model().channels(NcclAlgo::nvls).channels, 8);
  EXPECT_DOUBLE_EQ(fraction, static_cast<double>(0.85f) * 7.0 / 8.0);
  EXPECT_EQ(p.model().nvls_link_fraction(NcclAlgo::ring), 1.0);
  const ProtocolCost nvls = protocol_cost(p.model(), AR, NcclAlgo::nvls, NcclProto::simple, {});
  EXPECT_EQ(nvls.intra_fraction, fraction);
  EXPECT_EQ(protocol_cost(p.model(), AR, NcclAlgo::ring, NcclProto::simple, {}).intra_fraction, 1.0);
  // Only the bandwidth inside a host moves: NVLS's NVLink transfers take 1/fraction as long.
  const CostModel machine(t);
  const coll::LevelCosts levels = bandwidth_levels(machine.levels, nvls);
  EXPECT_DOUBLE_EQ(levels.beta_intra_us_per_byte, machine.levels.beta_intra_us_per_byte / fraction);
  EXPECT_EQ(levels.beta_inter_us_per_byte, machine.levels.beta_inter_us_per_byte);
  // A release without nvlsEfficiency (2.21) takes its 5/6; NVLSTree's part inside a host takes it too.
  NcclOptions v21;
  v21.version = NcclVersion::parse("2.21");
  EXPECT_DOUBLE_EQ(NcclModel(t, v21).nvls_link_fraction(NcclAlgo::nvls), 5.0 / 6.0);
  const NcclPricer two = pricer(topo::load_topology("dgx-h100:nodes=2"), v28);
  EXPECT_EQ(protocol_cost(two.model(), AR, NcclAlgo::nvls_tree, NcclProto::simple, {}).intra_fraction,
            two.model().nvls_link_fraction(NcclAlgo::nvls_tree));
  EXPECT_LT(two.model().nvls_link_fraction(NcclAlgo::nvls_tree), 1.0);
}

TEST(NcclPrice, NvlsChunksAsNcclsKernelsDo) {
  // enqueue.cc on an 8-GPU H100 node (16 channels x 8 heads = 128 chunks in flight): 128 KiB,
  // 64 KiB under 1 GiB, 32 KiB under 64 MiB, 16 KiB under 8 MiB; NVLSTree's 128 KiB (64 KiB from
  // 4 nodes), 64 KiB under 64 MiB, 32 KiB under 8 MiB.
  NcclOptions v28;
  v28.version = NcclVersion::parse("2.28");
  const NcclPricer one = pricer(topo::load_topology("dgx-h100"), v28);
  const auto nvls = [&](std::size_t bytes) { return one.model().nvls_chunk_bytes(NcclAlgo::nvls, bytes, 16); };
  EXPECT_EQ(nvls(std::size_t{8} << 30), 131072u);
  EXPECT_EQ(nvls(std::size_t{1} << 30), 131072u);
  EXPECT_EQ(nvls((std::size_t{1} << 30) - 1), 65536u);
  EXPECT_EQ(nvls(std::size_t{16} << 20), 32768u);
  EXPECT_EQ(nvls(std::size_t{4} << 20), 16384u);
  EXPECT_EQ(one.model().nvls_chunk_bytes(NcclAlgo::ring, std::size_t{1} << 30, 16), 0u);
  const NcclPricer two = pricer(topo::load_topology("dgx-h100:nodes=2"), v28);
  const auto tree2 = [&](std::size_t bytes) { return two.model().nvls_chunk_bytes(NcclAlgo::nvls_tree, bytes, 16); };
  EXPECT_EQ(tree2(std::size_t{1} << 30), 131072u);
  EXPECT_EQ(tree2(std::size_t{32} << 20), 65536u);
  EXPECT_EQ(tree2(std::size_t{4} << 20), 32768u);
  const NcclPricer four = pricer(topo::load_topology("dgx-h100:nodes=4"), v28);
  EXPECT_EQ(four.model().nvls_chunk_bytes(NcclAlgo::nvls_tree, std::size_t{1} << 30, 16), 65536u);
  // The schedule then runs NCCL's loop count: 8 GiB / (128 x 128 KiB) = 512 rounds, priced from
  // a short pipeline and extended (sim::price_pipeline) within 1e-9 of the whole.
  const CostModel m(topo::with_nvls_switch(topo::load_topology("dgx-h100")));
  const coll::Algorithm& a = coll::find_algorithm("nccl_nvls");
  coll::AlgoOptions o;
  o.chunk_elems = 131072 * 16 / 4;
  const std::size_t count = (std::size_t{1} << 30) / 4;  // 64 rounds: extended, and still priced whole here
  bool extrapolated = false;
  const double fast = price_pipeline(a, m.layout, count, 4, o, m.levels, &extrapolated);
  EXPECT_TRUE(extrapolated);
  const double whole =
      price_schedule(*coll::open_schedule(a.id, m.layout, count, o), m.layout, 4, m.levels);
  EXPECT_NEAR(fast / whole, 1.0, 1e-9);
  // nccl_nvls_tree declares its 2L pieces for the same shortcut: 24 rounds on two hosts, with an
  // uneven last chunk.
  const CostModel m2(topo::with_nvls_switch(topo::load_topology("dgx-h100:nodes=2")));
  const coll::Algorithm& t = coll::find_algorithm("nccl_nvls_tree");
  coll::AlgoOptions o2;
  o2.chunk_elems = 131072 * 16 / 2 / 4;
  ASSERT_EQ(t.pipeline_pieces(m2.layout, o2), 16u);
  const std::size_t count2 = 24 * 16 * o2.chunk_elems + 12345;
  extrapolated = false;
  const double fast2 = price_pipeline(t, m2.layout, count2, 4, o2, m2.levels, &extrapolated);
  EXPECT_TRUE(extrapolated);
  const double whole2 = price_schedule(*coll::open_schedule(t.id, m2.layout, count2, o2), m2.layout, 4, m2.levels);
  EXPECT_NEAR(fast2 / whole2, 1.0, 1e-9);
}

TEST(NcclPrice, MachineFiguresReplaceTheMachines) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const NcclPricer p = pricer(t);
  MachineFigures f = p.figures();
  EXPECT_NEAR(p.price(AR, 1 << 20, 4, &f).time_us / p.price(AR, 1 << 20).time_us, 1.0, 1e-12);
  f.alpha_intra_us += 1.0;
  const NcclPrice slow = p.price(AR, NcclAlgo::tree, NcclProto::ll, 1024, 4, &f);
  const NcclPrice base = p.price(AR, NcclAlgo::tree, NcclProto::ll, 1024);
  // Tree on 2 x 8: 2(8-1) steps inside a node.
  EXPECT_NEAR(slow.time_us - base.time_us, 14.0, 1e-6);
}

TEST(NcclPrice, NcclsOwnTimeStandsInWhereColltuneHasNoScheduleAndSaysSo) {
  // CollNetChain on a SHARP fabric: no colltune schedule.
  const topo::Topology t = topo::load_topology("fat-tree:nodes=2,sharp=1");
  NcclOptions o;
  o.collnet = true;
  o.algo_env = "CollNetChain";
  const NcclPricer p = pricer(t, o);
  const NcclPrice c = p.price(AR, 1 << 20);
  EXPECT_EQ(c.nccl.algo, NcclAlgo::collnet_chain);
  EXPECT_TRUE(c.schedule.empty());
  EXPECT_EQ(c.time_us, c.nccl.time_us);
  EXPECT_NE(c.fallback.find("CollNetChain allreduce: no colltune schedule"), std::string::npos) << c.fallback;
  // A cell NCCL does not run here: +infinity, and why.
  const NcclPricer plain = pricer(topo::load_topology("dgx-a100"));
  const NcclPrice nvls = plain.price(AR, NcclAlgo::nvls, NcclProto::simple, 1 << 20);
  EXPECT_TRUE(std::isinf(nvls.time_us));
  EXPECT_FALSE(nvls.fallback.empty());
}

TEST(NcclPrice, EveryAlgorithmWithAScheduleIsPricedByIt) {
  struct Case {
    const char* spec;
    const char* algo;
    const char* schedule;
  };
  for (const Case& c : {Case{"dgx-h100:nodes=2", "Tree", "nccl_tree"}, Case{"dgx-h100", "NVLS", "nccl_nvls"},
                        Case{"dgx-h100:nodes=2", "NVLSTree", "nccl_nvls_tree"},
                        Case{"fat-tree:nodes=2,sharp=1", "CollNetDirect", "nccl_collnet"}}) {
    NcclOptions o;
    o.algo_env = c.algo;
    o.collnet = std::string(c.algo) == "CollNetDirect";
    const NcclPricer p = pricer(topo::load_topology(c.spec), o);
    const NcclPrice priced = p.price(AR, 1 << 24);
    EXPECT_EQ(priced.schedule, c.schedule) << c.spec << " " << c.algo << ": " << priced.fallback;
    EXPECT_TRUE(std::isfinite(priced.time_us) && priced.time_us > 0);
  }
  // allgather and reduce-scatter by NCCL's ring are colltune's rings.
  const NcclPricer p = pricer(topo::load_topology("dgx-a100"));
  EXPECT_EQ(p.price(NcclColl::allgather, NcclAlgo::ring, NcclProto::simple, 1 << 24).schedule, "allgather_ring");
  EXPECT_EQ(p.price(NcclColl::reduce_scatter, NcclAlgo::ring, NcclProto::simple, 1 << 24).schedule,
            "reduce_scatter_ring");
}

TEST(NcclPrice, CalibratedFilesKeepTheMachineAsMeasuredForNccl) {
  topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  topo::Topology calibrated = t;
  std::string links = "[";
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    links += (i ? "," : "") + std::string("[") + std::to_string(t.link(i).bandwidth_gbps) + "," +
             std::to_string(t.link(i).latency_us) + "]";
    calibrated.set_link_figures(i, t.link(i).bandwidth_gbps * 0.1, t.link(i).latency_us * 3);
  }
  calibrated.calibration = R"({"nranks":16,"values":{"ll_efficiency":0.2},"measured_links":)" + links + "]}";
  const CalibrationFacts facts = calibration_facts(calibrated);
  EXPECT_TRUE(facts.calibrated);
  EXPECT_EQ(facts.efficiency.ll, 0.2);
  const topo::Topology measured = measured_machine(calibrated);
  for (std::size_t i = 0; i < t.num_links(); ++i) EXPECT_NEAR(measured.link(i).bandwidth_gbps, t.link(i).bandwidth_gbps, 1e-6);
  // NCCL picks on the machine as measured: the same as on the uncalibrated one.
  const NcclPricer p(calibrated, measured, {}, facts.efficiency);
  const NcclPricer q = pricer(t);
  for (std::size_t bytes = 1024; bytes <= (std::size_t{1} << 30); bytes *= 8) {
    EXPECT_EQ(p.price(AR, bytes).nccl.algo, q.price(AR, bytes).nccl.algo);
    EXPECT_EQ(p.price(AR, bytes).nccl.proto, q.price(AR, bytes).nccl.proto);
  }
  // Used on another machine shape: one clear error.
  topo::Topology other = topo::load_topology("dgx-a100:nodes=4");
  other.calibration = calibrated.calibration;
  try {
    calibration_facts(other);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another machine shape"), std::string::npos) << e.what();
  }
  calibrated.calibration = R"({"nranks":16,"values":{"ll_efficiency":1.5}})";
  EXPECT_THROW(calibration_facts(calibrated), Error);
  // The sizes the fit measured, from its rows; none without rows; a row without a size is an error.
  EXPECT_EQ(facts.measured_max_bytes, 0u);
  calibrated.calibration = R"({"nranks":16,"rows":[{"bytes":4096},{"bytes":1048576},{"bytes":65536}]})";
  const CalibrationFacts rows = calibration_facts(calibrated);
  EXPECT_EQ(rows.measured_min_bytes, 4096u);
  EXPECT_EQ(rows.measured_max_bytes, 1048576u);
  calibrated.calibration = R"({"nranks":16,"rows":[{"bytes":4096},{"measured_us":3}]})";
  EXPECT_THROW(calibration_facts(calibrated), Error);
}

// The schedule of `a` priced on `m` in full, at NCCL's tree chunk for `proto` (NCCL's buffer per
// protocol over its 8 steps; LL carries half, LL128 120 of every 128 bytes): the reference
// the pricer's shortcuts (extension in depth, interpolation between sizes) are held to.
double exact_price(const NcclPricer& p, const CostModel& m, const coll::Algorithm& a, NcclAlgo algo, NcclProto proto,
                   std::size_t bytes) {
  coll::AlgoOptions opts;
  if (a.nccl_tree_channels) {
    std::size_t step = static_cast<std::size_t>(p.model().constants().buffsize[static_cast<std::size_t>(index_of(proto))]) / 8;
    if (proto == NcclProto::ll) step /= 2;
    if (proto == NcclProto::ll128) step = step / 128 * 120;
    opts.chunk_elems = step / 4;
  }
  // NVLS and NVLSTree: NCCL's chunk on every channel for every head, per round.
  const int channels = p.model().channels_for(algo, proto, bytes);
  if (const std::size_t chunk = p.model().nvls_chunk_bytes(algo, bytes, channels); chunk > 0)
    opts.chunk_elems = chunk * static_cast<std::size_t>(channels) / (algo == NcclAlgo::nvls_tree ? 2 : 1) / 4;
  const ProtocolCost cost = protocol_cost(p.model(), AR, algo, proto, {});
  return latency_us(cost, m.levels) +
         hint_or_price(a, m.layout, bytes, 4, m.options_for(a, opts), bandwidth_levels(m.levels, cost));
}

// NCCL's trees across a power of two of hosts above 16 are priced on 8 and 16 hosts and extended
// in the tree's depth: within 1% of the schedule priced on the whole machine.
TEST(NcclPriceScale, TreesAcrossManyHostsExtendFromSixteenHosts) {
  for (const std::string spec : {"dgx-h100:nodes=32", "dgx-a100:nodes=32", "dgx-h100:nodes=64"})
    for (const std::string algo : {"Tree", "NVLSTree"}) {
      const topo::Topology t = topo::load_topology(spec);
      NcclOptions o;
      o.algo_env = algo;
      const NcclPricer p(t, t, o);
      const bool nvls = algo == "NVLSTree";
      if (nvls && p.model().unavailable(AR, NcclAlgo::nvls_tree)) continue;
      const topo::Topology machine = nvls ? topo::with_nvls_switch(t) : t;
      const CostModel whole(machine, machine.num_ranks(), nccl_schedule_channels(t));
      const coll::Algorithm& a = coll::find_algorithm(nvls ? "nccl_nvls_tree" : "nccl_tree");
      for (std::size_t bytes : {std::size_t{1} << 16, std::size_t{1} << 20, std::size_t{1} << 24, std::size_t{1} << 28}) {
        const NcclPrice priced = p.price(AR, bytes);
        ASSERT_EQ(priced.schedule, a.id) << priced.fallback;
        const double exact = exact_price(p, whole, a, priced.nccl.algo, priced.nccl.proto, bytes);
        EXPECT_NEAR(priced.time_us / exact, 1.0, 0.01) << spec << " " << algo << " " << bytes;
      }
    }
}

// Between two powers of two above 64 KiB a cell's price is interpolated between theirs: within
// 2% of the size priced exactly, on every cell NCCL runs on two H100 and two A100 hosts.
TEST(NcclPriceSizes, BetweenPowersOfTwoWithinTwoPercentOfExact) {
  for (const char* spec : {"dgx-h100:nodes=2", "dgx-a100:nodes=2"}) {
    const topo::Topology t = topo::load_topology(spec);
    const NcclPricer p(t, t, {});
    const CostModel plain(t, t.num_ranks(), nccl_schedule_channels(t));
    for (NcclAlgo algo : {NcclAlgo::ring, NcclAlgo::tree})
      for (NcclProto proto : kNcclProtos)
        for (std::size_t bytes : {std::size_t{3} << 16, std::size_t{5} << 19, std::size_t{3} << 23, std::size_t{7} << 25}) {
          const NcclPrice priced = p.price(AR, algo, proto, bytes);
          if (priced.schedule.empty()) continue;
          const double exact = exact_price(p, plain, coll::find_algorithm(priced.schedule), algo, proto, bytes);
          EXPECT_NEAR(priced.time_us / exact, 1.0, 0.02) << spec << " " << to_string(algo) << "/" << to_string(proto) << " " << bytes;
        }
  }
}

}  // namespace
