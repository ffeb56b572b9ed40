// The parameter-server baseline: the server hosts added to a machine (topo::with_server_hosts),
// the exchange priced by the event simulator (sim::PsExchange), the ps runtime's parsing and
// the tuner's use of it, and the ps schedule run for real over the threads transport.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/threads.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/ps.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/hardware.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/emit.hpp"
#include "colltune/tuner/objective.hpp"
#include "colltune/tuner/runtime_model.hpp"
#include "colltune/tuner/sweep.hpp"
#include "colltune/tuner/tuner.hpp"

namespace colltune {
namespace {

using ::testing::HasSubstr;

// One GPU and one NIC per host: a worker's NIC and a server's NIC have the same rate.
topo::Topology one_nic_hosts(int nodes) {
  return topo::load_topology("fat-tree:nodes=" + std::to_string(nodes) + ",gpus=1,nics=1");
}

TEST(PsTopology, ServerHostsJoinTheNetworkAtTheNicRate) {
  const topo::Topology base = one_nic_hosts(4);
  const topo::Topology t = topo::with_server_hosts(base, 3, 7.5);
  ASSERT_EQ(t.num_ranks(), base.num_ranks() + 3);
  ASSERT_EQ(t.num_hosts(), base.num_hosts() + 3);
  const RankLayout layout = t.rank_layout();
  for (int s = 0; s < 3; ++s) {
    const int rank = base.num_ranks() + s;
    EXPECT_EQ(layout.ranks_on_host(layout.host_of(rank)).size(), 1U);  // a host of its own
    EXPECT_EQ(t.device(t.device_of_rank(rank)).reduce_gbps, 7.5);
    // Worker -> server is as wide as worker -> worker: the NIC rate.
    EXPECT_DOUBLE_EQ(t.route(0, rank).bottleneck_gbps, base.route(0, 1).bottleneck_gbps);
  }
  EXPECT_THROW(topo::with_server_hosts(base, 0, 1), Error);
  EXPECT_THAT([&] { topo::with_server_hosts(topo::load_topology("torus:dims=2x2"), 1, 1); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no link from a host to a network switch")));
}

TEST(PsOptions, ParseAndSpell) {
  const sim::PsOptions o = sim::parse_ps_options("servers=4,colocated,agg_gbps=20");
  EXPECT_EQ(o.servers, 4);
  EXPECT_TRUE(o.colocated);
  EXPECT_EQ(o.agg_gbps, 20);
  EXPECT_EQ(sim::parse_ps_options(sim::to_string(o)), o);
  EXPECT_THAT([] { sim::parse_ps_options("servers=0"); }, ::testing::ThrowsMessage<Error>(HasSubstr("servers: '0' must be an integer in 1..4096")));
  EXPECT_THAT([] { sim::parse_ps_options("servers=4,fast"); }, ::testing::ThrowsMessage<Error>(HasSubstr("'fast'")));
  EXPECT_THAT([] { sim::parse_ps_options("servers=x"); }, ::testing::ThrowsMessage<Error>(HasSubstr("'x' is not a decimal integer")));
  EXPECT_THAT([] { sim::parse_ps_options("servers=2,agg_gbps=-1"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("agg_gbps: '-1' must not be negative")));
  EXPECT_THAT([] { sim::parse_ps_options("colocated"); }, ::testing::ThrowsMessage<Error>(HasSubstr("servers=S")));
  EXPECT_EQ(tuner::parse_runtime_spec("ps:servers=2").runtime, coll::Runtime::ps);
  EXPECT_EQ(tuner::to_string(tuner::parse_runtime_spec("ps:servers=2,colocated")), "ps:servers=2,colocated");
  EXPECT_EQ(tuner::parse_runtime_spec("horovod").runtime, coll::Runtime::horovod);
}

// A server's NIC carries W n/S bytes in (push) and as many out (pull), one after the other;
// with S < W it is the bottleneck, so the exchange takes 2 W n / (S B). What the closed form
// leaves out bounds the difference: the latencies of the two legs (push, pull) and the server
// summing its W blocks at the aggregation rate.
TEST(PsExchange, OneServersNicIsTheBottleneck) {
  const int workers = 8;
  const topo::Topology base = one_nic_hosts(workers);
  for (int servers : {1, 2, 4}) {
    const double agg_gbps = 400;
    sim::PsExchange ps(base, sim::PsOptions{servers, false, agg_gbps});
    const std::size_t bytes = std::size_t{64} << 20;
    const double shard = static_cast<double>(bytes) / servers;
    const topo::Path& path = ps.topology().route(0, workers);
    const double b = path.bottleneck_gbps * 1e3;  // bytes per us
    const double expected = 2.0 * workers * shard / b;
    const double tolerance = 2.0 * path.latency_us + workers * shard / (agg_gbps * 1e3) + 1e-6 * expected;
    EXPECT_NEAR(ps.time_us(bytes, 4), expected, tolerance) << "S=" << servers;
  }
}

TEST(PsExchange, MoreDedicatedServersNeverSlowTheExchange) {
  const topo::Topology base = topo::load_topology("fat-tree:nodes=4");
  for (std::size_t bytes : {std::size_t{4} << 10, std::size_t{1} << 20, std::size_t{64} << 20}) {
    double previous = sim::PsExchange(base, {1, false, 0}).time_us(bytes, 4);
    for (int servers : {2, 4, 8, 16}) {
      const double t = sim::PsExchange(base, {servers, false, 0}).time_us(bytes, 4);
      EXPECT_LE(t, previous * (1 + 1e-9)) << servers << " servers, " << bytes << " bytes";
      previous = t;
    }
  }
}

TEST(PsExchange, ColocatedServersNeedHosts) {
  const topo::Topology base = topo::load_topology("fat-tree:nodes=2");
  EXPECT_THAT(
      [&] {
        sim::PsExchange(base, {3, true, 0});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("servers=3 needs 3 hosts")));
  sim::PsExchange ps(base, {2, true, 5});
  EXPECT_EQ(ps.topology().num_ranks(), base.num_ranks());
  EXPECT_EQ(ps.topology().device(ps.topology().device_of_rank(8)).reduce_gbps, 5);  // host 1's first rank
  EXPECT_GT(ps.time_us(1 << 20, 4), 0);
}

// Few workers, many servers: PS moves each worker's n once each way at the NIC rate, the ring
// 2(p-1)/p n, so it wins or ties; many workers on one server: the server's NIC loses.
TEST(PsRuntime, TunesBucketingAndComparesWithAllreduce) {
  const topo::Topology t = one_nic_hosts(8);
  const sim::Workload w = sim::load_workload("resnet50", nullptr, topo::gpu_of(t).name);
  tuner::TuneOptions options;
  tuner::SimulatedObjective few(t, w, sim::Engine::analytic, tuner::parse_runtime_spec("ps:servers=1"));
  const tuner::TuneResult one = tuner::tune(t, w, few, options);
  EXPECT_EQ(one.runtime, coll::Runtime::ps);
  EXPECT_EQ(one.best.candidate.algorithm, "ps");
  EXPECT_LE(one.best.step_time_us, one.baseline.step_time_us);
  // Side by side: the allreduce at Horovod's defaults on the same machine and model.
  tuner::SimulatedObjective horovod(t, w, sim::Engine::analytic, coll::Runtime::horovod);
  EXPECT_EQ(one.allreduce_step_us, horovod.evaluate(tuner::RuntimeModel(t, coll::Runtime::horovod).baseline()));
  EXPECT_GT(one.best.step_time_us, one.allreduce_step_us);  // 8 workers on one server's NIC
  EXPECT_EQ(tuner::tune(t, w, horovod, options).allreduce_step_us, 0);
  tuner::SimulatedObjective many(t, w, sim::Engine::analytic, tuner::parse_runtime_spec("ps:servers=8"));
  const tuner::TuneResult eight = tuner::tune(t, w, many, options);
  EXPECT_LT(eight.best.step_time_us, one.best.step_time_us);
  // A PS job reads no Horovod or NCCL settings: colltune.json and report.html only.
  const auto dir = std::filesystem::temp_directory_path() / ("colltune-ps-" + std::to_string(::getpid()));
  const auto files = tuner::write_configs(dir, eight);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(files.size(), 2U);
  EXPECT_EQ(files[0].filename(), "colltune.json");
  EXPECT_EQ(files[1].filename(), "report.html");
  tuner::RuntimeModel model(t, tuner::parse_runtime_spec("ps:servers=8"));
  EXPECT_EQ(model.space().algorithms, std::vector<std::string>{"ps"});
  EXPECT_THROW(model.space().fix("algorithm=ring"), Error);
  EXPECT_EQ(tuner::make_space(model, {"chunk=1MiB"}).chunks, std::vector<std::size_t>{1 * MiB});  // a partition size
  EXPECT_EQ(model.space().chunks, (std::vector<std::size_t>{0, 4 * MiB}));
}

// `sweep --vary runtime=...`: a ps runtime's options keep their commas, each point is tuned for
// its runtime exactly as `tune` alone would, and the CSV quotes the comma'd value.
TEST(PsSweep, RuntimeAxisSideBySide) {
  const tuner::SweepAxis axis = tuner::parse_sweep_axis("runtime=horovod,ps:servers=4,colocated,ps:servers=2");
  EXPECT_EQ(axis.values, (std::vector<std::string>{"horovod", "ps:servers=4,colocated", "ps:servers=2"}));
  tuner::SweepSpec spec;
  spec.topology = "fat-tree:nodes=4";
  spec.model = "resnet50";
  spec.axes = {axis};
  const tuner::SweepResult r = tuner::run_sweep(spec, nullptr);
  ASSERT_EQ(r.points.size(), 3U);
  EXPECT_EQ(r.points[0].topology, "fat-tree:nodes=4");  // the runtime is not a topology parameter
  const topo::Topology t = topo::load_topology("fat-tree:nodes=4");
  const sim::Workload w = sim::load_workload("resnet50", nullptr, topo::gpu_of(t).name);
  tuner::SimulatedObjective alone(t, w, sim::Engine::analytic, tuner::parse_runtime_spec("ps:servers=4,colocated"));
  const tuner::TuneResult tuned = tuner::tune(t, w, alone, {});
  EXPECT_EQ(r.points[1].tuned_step_us, tuned.best.step_time_us);
  EXPECT_EQ(r.points[1].tuned.algorithm, "ps");
  EXPECT_EQ(r.points[0].tuned.algorithm == "ps", false);
  EXPECT_THAT(tuner::sweep_csv(r), HasSubstr("\n\"ps:servers=4,colocated\","));
}

// The dedicated-server schedule run by rank threads: workers' sums exact, whatever the servers
// started with.
TEST(PsThreads, DedicatedAndColocatedExact) {
  struct Case {
    std::vector<int> hosts;  // host of each rank
    int servers;
    bool colocated;
  };
  const std::vector<Case> cases{{{0, 0, 0, 1, 2}, 2, false},
                                {{0, 1, 2, 3, 4, 5, 6, 7}, 3, false},
                                {{0, 0, 1, 1, 1, 2}, 3, true},
                                {{0, 1, 0, 1, 0}, 2, true},
                                {{0, 0, 0, 0, 0, 0, 0, 1}, 1, false}};
  for (const Case& c : cases) {
    const RankLayout layout(c.hosts);
    coll::AlgoOptions o;
    o.ps_servers = c.servers;
    o.ps_colocated = c.colocated;
    for (std::size_t count : {std::size_t{1}, std::size_t{5}, std::size_t{1001}}) {
      for (std::size_t chunk : {std::size_t{0}, std::size_t{7}}) {
        o.chunk_elems = chunk;
        const coll::Schedule s = coll::build_schedule("ps", layout, count, o);
        std::vector<std::vector<std::int32_t>> bufs(static_cast<std::size_t>(layout.nranks()));
        for (int r = 0; r < layout.nranks(); ++r)
          for (std::size_t i = 0; i < count; ++i)
            bufs[static_cast<std::size_t>(r)].push_back(
                s.is_helper(r) ? 987654 : static_cast<std::int32_t>(r * 31 + i % 17) - 40);
        coll::run_threads(layout, [&](coll::Communicator& comm) {
          const coll::PlainCodec codec(coll::DType::i32, coll::ReduceOp::sum);
          coll::execute(s, comm, bufs[static_cast<std::size_t>(comm.rank())].data(), 4, codec, 20.0);
        });
        for (int r = 0; r < s.data_ranks(); ++r)
          for (std::size_t i = 0; i < count; ++i) {
            std::int32_t want = 0;
            for (int q = 0; q < s.data_ranks(); ++q) want += static_cast<std::int32_t>(q * 31 + i % 17) - 40;
            ASSERT_EQ(bufs[static_cast<std::size_t>(r)][i], want)
                << "rank " << r << " element " << i << " servers " << c.servers << " count " << count;
          }
      }
    }
  }
}

}  // namespace
}  // namespace colltune
