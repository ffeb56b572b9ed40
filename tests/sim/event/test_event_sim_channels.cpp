// The event simulator routes each message by its op channel (coll::Op::channel) through the NIC
// NCCL assigns to that channel (Topology::route): on dgx-a100 the two GPUs behind one PCIe
// switch leave their server through different NICs, so every NIC carries traffic and deleting
// half of them slows a schedule whose channels leave through different GPUs. Both engines.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/algorithms/index_math.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/json_io.hpp"

namespace colltune::sim {
namespace {

constexpr int kGpus = 8;  // per dgx-a100 server

// k rings over all ranks on 1/k of the buffer each, ring c on op channel c. Inside server h
// ring c visits local GPUs c+1, c+2, ..., c (mod 8), so it leaves every server from local GPU
// c: the k channels leave through k different GPUs.
std::unique_ptr<coll::StepSource> channel_rings(int hosts, int k, std::size_t count) {
  std::vector<coll::algo::RingSpec> rings;
  for (int c = 0; c < k; ++c) {
    coll::algo::RingSpec ring;
    for (int h = 0; h < hosts; ++h)
      for (int i = 0; i < kGpus; ++i) ring.members.push_back(h * kGpus + (c + 1 + i) % kGpus);
    ring.range = coll::algo::segment_of(static_cast<std::size_t>(c), static_cast<std::size_t>(k), count);
    ring.channel = c;
    rings.push_back(std::move(ring));
  }
  coll::ScheduleHeader header{"channel_rings", coll::Collective::allreduce, hosts * kGpus, count, {}};
  return coll::algo::generate_rings(std::move(header), std::move(rings), 0, coll::algo::RingShape::allreduce);
}

// dgx-a100:nodes=2 through its JSON export with NICs 1, 3, 5, 7 of every server deleted (and
// their links): each PCIe switch keeps one NIC, which its two GPUs then share.
topo::Topology without_odd_nics() {
  nlohmann::json j = nlohmann::json::parse(topo::to_json(topo::load_topology("dgx-a100:nodes=2")));
  std::set<std::string> gone;
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : j["devices"]) {
    const std::string id = d["id"];
    const bool odd_nic = d["kind"] == "nic" && (id.back() - '0') % 2 == 1;
    if (odd_nic) gone.insert(id);
    else devices.push_back(d);
  }
  EXPECT_EQ(gone.size(), 8u);
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : j["links"])
    if (gone.count(l["from"]) == 0 && gone.count(l["to"]) == 0) links.push_back(l);
  j["devices"] = devices;
  j["links"] = links;
  topo::Topology t = topo::topology_from_json(j.dump(), "dgx-a100-half-nics.json");
  t.validate();
  return t;
}

EventSimResult run(const coll::StepSource& source, const topo::Topology& t, EventEngine engine) {
  EventSimOptions options;
  options.engine = engine;
  return simulate_schedule(source, t, options);
}

TEST(EventSimChannels, DeletingEveryOtherNicOfADgxA100SlowsChannelsThatLeaveThroughEveryGpu) {
  const topo::Topology full = topo::load_topology("dgx-a100:nodes=2");
  const topo::Topology half = without_odd_nics();
  const std::size_t count = std::size_t{16} << 20;  // 64 MiB of floats
  const auto rings = channel_rings(2, kGpus, count);
  const double all_nics = run(*rings, full, EventEngine::fast).time_us;
  const double half_nics = run(*rings, half, EventEngine::fast).time_us;
  // The NICs are the bottleneck: eight channels on eight NICs, then two channels on each of four.
  EXPECT_GT(half_nics, 1.8 * all_nics) << all_nics << " us with every NIC, " << half_nics << " us with half";
  EXPECT_NEAR(run(*rings, full, EventEngine::reference).time_us, all_nics, 1e-9 * all_nics);
  EXPECT_NEAR(run(*rings, half, EventEngine::reference).time_us, half_nics, 1e-9 * half_nics);
}

TEST(EventSimChannels, EveryNicOfADgxA100CarriesItsChannel) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const EventSimResult r = run(*channel_rings(2, kGpus, 1 << 20), t, EventEngine::fast);
  std::set<std::size_t> used;
  for (const LinkUsage& u : r.links) used.insert(u.link);
  for (int h = 0; h < 2; ++h)
    for (int n = 0; n < kGpus; ++n) {
      const topo::VertexId nic = *t.find_device("node" + std::to_string(h) + "/nic" + std::to_string(n));
      bool carried = false;  // some link out of the NIC to the network carried bytes
      for (std::size_t l : t.out_links(nic)) carried |= t.device(t.link_target(l)).host < 0 && used.count(l) > 0;
      EXPECT_TRUE(carried) << "node" << h << "/nic" << n << " carried nothing";
    }
}

// Ranks 0 and 1 (behind one PCIe switch) send to the other server at once: through two NICs,
// each transfer at a NIC's full rate, as fast as one of them alone.
TEST(EventSimChannels, TwoGpusBehindOnePcieSwitchDoNotShareANic) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const std::size_t n = 1 << 22;
  coll::Schedule both;
  both.algorithm = "two_senders";
  both.nranks = 16;
  both.count = n;
  both.ranks.resize(16);
  both.ranks[0] = {coll::Step{{coll::Op(coll::OpKind::send, 8, {0, n})}}};
  both.ranks[1] = {coll::Step{{coll::Op(coll::OpKind::send, 9, {0, n})}}};
  both.ranks[8] = {coll::Step{{coll::Op(coll::OpKind::recv_copy, 0, {0, n})}}};
  both.ranks[9] = {coll::Step{{coll::Op(coll::OpKind::recv_copy, 1, {0, n})}}};
  coll::Schedule one = both;
  one.ranks[1].clear();
  one.ranks[9].clear();
  for (EventEngine engine : {EventEngine::fast, EventEngine::reference}) {
    EventSimOptions options;
    options.engine = engine;
    const double alone = simulate_schedule(coll::StoredSteps(one), t, options).time_us;
    EXPECT_NEAR(simulate_schedule(coll::StoredSteps(both), t, options).time_us, alone, 1e-9 * alone);
  }
  EXPECT_NE(t.nic_for_channel(0, 0), t.nic_for_channel(1, 0));
}

// nccl_ring through the cost model takes NCCL's ring channels (8 on dgx-a100, one per NIC)
// and, leaving the servers through every NIC, runs far faster than one ring in rank order; on
// half the NICs it slows down.
TEST(EventSimChannels, NcclRingRunsNcclsChannelsOverEveryNic) {
  const topo::Topology full = topo::load_topology("dgx-a100:nodes=2");
  const topo::Topology half = without_odd_nics();
  const CostModel model(full);
  ASSERT_EQ(model.nccl_ring_orders.size(), 8u);
  CollectiveRequest request;
  request.bytes = std::size_t{256} << 20;
  request.algorithm = "ring";
  const double ring = simulate_collective(model, full, request).time_us;
  request.algorithm = "nccl_ring";
  const double nccl_ring = simulate_collective(model, full, request).time_us;
  EXPECT_LT(nccl_ring, ring / 5) << "ring " << ring << " us, nccl_ring " << nccl_ring << " us";
  EXPECT_NEAR(model.time_us(request), nccl_ring, 0.02 * nccl_ring);  // uncontended: the analytic model agrees
  const CostModel half_model(half);
  EXPECT_GT(simulate_collective(half_model, half, request).time_us, 1.8 * nccl_ring);
}

// nccl_tree through the cost model takes NCCL's tree chains (the tree search's channels, two
// channels each), spreads its host crossings over every NIC (on half the NICs it slows down),
// and the fast engine, the reference engine and the analytic model agree on it.
TEST(EventSimChannels, NcclTreeRunsNcclsTreeChannelsOverEveryNic) {
  const topo::Topology full = topo::load_topology("dgx-a100:nodes=2");
  const topo::Topology half = without_odd_nics();
  const CostModel model(full);
  ASSERT_FALSE(model.nccl_tree_orders.empty());
  CollectiveRequest request;
  request.bytes = std::size_t{64} << 20;
  request.algorithm = "nccl_tree";
  request.options.chunk_elems = std::size_t{128} << 10;  // NCCL's Simple tree chunk, 512 KiB
  const coll::AlgoOptions options = model.options_for(coll::find_algorithm("nccl_tree"), request.options);
  EXPECT_EQ(options.channel_orders, model.nccl_tree_orders);
  EXPECT_EQ(options.nccl_simple_tree, model.nccl_simple_tree);
  std::set<int> channels;
  const coll::Schedule s = coll::build_schedule("nccl_tree", model.layout, request.bytes / 4, options);
  for (const auto& steps : s.ranks)
    for (const coll::Step& step : steps)
      for (const coll::Op& op : step.ops) channels.insert(op.channel);
  EXPECT_EQ(channels.size(), 2 * model.nccl_tree_orders.size());
  EventSimOptions reference;
  reference.engine = EventEngine::reference;
  const double fast = simulate_collective(model, full, request).time_us;
  EXPECT_NEAR(simulate_collective(model, full, request, reference).time_us, fast, 1e-9 * fast);
  EXPECT_NEAR(model.time_us(request), fast, 0.02 * fast);
  const CostModel half_model(half);
  EXPECT_GT(simulate_collective(half_model, half, request).time_us, 1.3 * fast);
}

TEST(EventSimChannels, PairedOpsOnDifferentChannelsAreAnError) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  coll::Schedule s;
  s.algorithm = "mismatch";
  s.nranks = 16;
  s.count = 4;
  s.ranks.resize(16);
  s.ranks[0] = {coll::Step{{coll::Op(coll::OpKind::send, 8, {0, 4}, 1)}}};
  s.ranks[8] = {coll::Step{{coll::Op(coll::OpKind::recv_copy, 0, {0, 4}, 2)}}};
  for (EventEngine engine : {EventEngine::fast, EventEngine::reference}) {
    EventSimOptions options;
    options.engine = engine;
    try {
      simulate_schedule(coll::StoredSteps(s), t, options);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("schedule 'mismatch': send on channel 1 at rank 0 step 0 is "
                                                 "received on channel 2 at rank 8 step 0"));
    }
  }
}

}  // namespace
}  // namespace colltune::sim
