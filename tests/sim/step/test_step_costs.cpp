// The step model's named costs: each one set to zero (or neutral) and to a value, on tiny
// workloads whose difference can be worked out by hand.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/step_costs.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Every cost off: free copies and launches, no per-rank or per-tensor time, no interference,
// full link bandwidth. The negotiation base stays derived.
StepCosts no_costs() {
  StepCosts c;
  c.fusion_copy_gbps = kInf;
  c.negotiation_us_per_rank = 0;
  c.tensor_us = 0;
  c.launch_us = 0;
  c.interference = 1;
  c.nvlink_efficiency = c.pcie_efficiency = c.ib_efficiency = c.roce_efficiency = c.tcp_efficiency = 1;
  return c;
}

// `n` fp32 tensors of `count` elements, ready at `ready_us` (the last at backward_us).
Workload tensors(std::size_t n, std::size_t count, double backward_us = 0) {
  Workload w{"tiny", 10, backward_us, {}};
  for (std::size_t i = 0; i < n; ++i) {
    std::string name = "t";  // not "t" + ...: GCC 12 warns (-Wrestrict) about that inlined copy
    name += std::to_string(i);
    w.tensors.push_back({name, count, coll::DType::f32, 0});
  }
  if (backward_us > 0) w.tensors.back().ready_us = backward_us;
  return w;
}

StepResult run(const topo::Topology& t, const Workload& w, const StepCosts& costs, const StepConfig& c = {}) {
  return StepSimulator(t, costs).run(w, c);
}

TEST(StepCosts, FusionCopyChargesBothCopiesOfAFusedBuffer) {
  const topo::Topology t = topo::load_topology("flat:ranks=4");
  const Workload w = tensors(2, 256 * 1024);  // two 1 MiB tensors: one 2 MiB buffer
  StepCosts slow = no_costs();
  slow.fusion_copy_gbps = 100;  // 1e5 bytes per us
  const StepResult off = run(t, w, no_costs());
  const StepResult on = run(t, w, slow);
  ASSERT_EQ(on.buffers.size(), 1u);
  ASSERT_EQ(on.buffers[0].tensors, 2u);
  // In and out: 2 x 2 MiB at 100 GB/s.
  EXPECT_NEAR(on.step_time_us - off.step_time_us, 2.0 * 2 * MiB / 1e5, 1e-9);
  // A lone tensor is reduced in place: no copy.
  StepConfig unfused;
  unfused.fusion_threshold_bytes = 0;
  EXPECT_DOUBLE_EQ(run(t, w, slow, unfused).step_time_us, run(t, w, no_costs(), unfused).step_time_us);
}

TEST(StepCosts, NegotiationGrowsWithTheRankCount) {
  for (int ranks : {2, 8, 32}) {
    const topo::Topology t = topo::load_topology("flat:ranks=" + std::to_string(ranks));
    StepCosts per_rank = no_costs();
    per_rank.negotiation_us_per_rank = 10;
    const StepSimulator off(t, no_costs());
    const StepSimulator on(t, per_rank);
    EXPECT_DOUBLE_EQ(on.negotiation_us() - off.negotiation_us(), 10.0 * ranks);
    const Workload w = tensors(1, 1024);
    EXPECT_DOUBLE_EQ(on.run(w, {}).buffers[0].start_us - off.run(w, {}).buffers[0].start_us, 10.0 * ranks);
  }
  // The base is the derived 64-byte allreduce unless set.
  const topo::Topology t = topo::load_topology("flat:ranks=8");
  StepCosts base = no_costs();
  base.negotiation_base_us = 40;
  EXPECT_DOUBLE_EQ(StepSimulator(t, base).negotiation_us(), 40);
  EXPECT_GT(StepSimulator(t, no_costs()).costs().negotiation_base_us, 0);
}

TEST(StepCosts, TensorAndLaunchOverheads) {
  const topo::Topology t = topo::load_topology("flat:ranks=4");
  const Workload w = tensors(5, 1024);
  StepCosts per_tensor = no_costs();
  per_tensor.tensor_us = 3;
  EXPECT_NEAR(run(t, w, per_tensor).step_time_us - run(t, w, no_costs()).step_time_us, 5 * 3.0, 1e-9);
  // Unfused: five buffers, five launches.
  StepConfig unfused;
  unfused.fusion_threshold_bytes = 0;
  StepCosts launch = no_costs();
  launch.launch_us = 7;
  const StepResult on = run(t, w, launch, unfused);
  ASSERT_EQ(on.buffers.size(), 5u);
  EXPECT_NEAR(on.step_time_us - run(t, w, no_costs(), unfused).step_time_us, 5 * 7.0, 1e-9);
  // A runtime's own price already includes its launch.
  StepConfig hooked;
  hooked.price_buffer = [](std::size_t bytes, std::size_t, std::size_t) { return BufferPrice{"hook", 1.0 + static_cast<double>(bytes) / 1000.0}; };
  EXPECT_DOUBLE_EQ(run(t, w, launch, hooked).step_time_us, run(t, w, no_costs(), hooked).step_time_us);
}

TEST(StepCosts, InterferenceSlowsBackwardComputeUnderCommunication) {
  const topo::Topology t = topo::load_topology("flat:ranks=4");
  // A 4 MiB gradient ready at once, the last (tiny) one when 1000 us of backward work is done.
  Workload w{"tiny", 10, 1000, {{"big", 1024 * 1024, coll::DType::f32, 0}, {"last", 16, coll::DType::f32, 1000}}};
  StepConfig c;
  c.cycle_time_us = 0;  // a tensor goes when it is ready
  c.negotiation_us = 0;
  StepCosts slow = no_costs();
  slow.interference = 2;
  const StepResult off = run(t, w, no_costs(), c);
  const StepResult on = run(t, w, slow, c);
  const double busy = off.buffers[0].end_us;  // the big buffer runs over [0, busy]
  ASSERT_LT(busy, 1000);
  EXPECT_DOUBLE_EQ(on.buffers[0].end_us, busy);
  // During [0, busy] compute does busy / 2 of work; the rest runs at full speed after it.
  const double backward_end = busy + (1000 - busy / 2);
  EXPECT_NEAR(on.buffers[1].start_us, backward_end, 1e-9);
  EXPECT_NEAR(on.step_time_us - off.step_time_us, backward_end - off.buffers[1].start_us, 1e-9);
  EXPECT_DOUBLE_EQ(on.compute_us, off.compute_us);  // compute is the nominal forward + backward
}

TEST(StepCosts, TransportEfficiencyScalesTheNetworkBandwidth) {
  const Workload w = tensors(1, 16 * 1024 * 1024);  // 64 MiB: bandwidth-bound
  StepCosts half = no_costs();
  half.ib_efficiency = 0.5;
  // Half the efficiency is exactly half the link bandwidth.
  const topo::Topology full = topo::load_topology("flat:ranks=4,bw=12.5");
  const topo::Topology halved = topo::load_topology("flat:ranks=4,bw=6.25");
  EXPECT_DOUBLE_EQ(run(full, w, half).step_time_us, run(halved, w, no_costs()).step_time_us);
  // The topology's transport picks the efficiency.
  topo::Topology tcp = full;
  tcp.transport = topo::NetTransport::tcp;
  StepCosts tcp_half = no_costs();
  tcp_half.tcp_efficiency = 0.5;
  EXPECT_DOUBLE_EQ(run(tcp, w, tcp_half).step_time_us, run(halved, w, no_costs()).step_time_us);
  EXPECT_DOUBLE_EQ(run(tcp, w, half).step_time_us, run(full, w, no_costs()).step_time_us);  // ib's: unused
}

TEST(StepCosts, NvlinkAndPcieEfficienciesScaleTheirLinks) {
  const topo::Topology t = topo::load_topology("dgx-h100");
  const Workload w = tensors(1, 64 * 1024 * 1024);
  for (topo::LinkKind kind : {topo::LinkKind::nvlink, topo::LinkKind::pcie}) {
    StepCosts c = no_costs();
    (kind == topo::LinkKind::nvlink ? c.nvlink_efficiency : c.pcie_efficiency) = 0.5;
    EXPECT_DOUBLE_EQ(run(t, w, c).step_time_us, run(t.with_scaled_bandwidth(kind, 0.5), w, no_costs()).step_time_us)
        << topo::to_string(kind);
  }
  StepCosts c = no_costs();
  c.nvlink_efficiency = 0.5;
  EXPECT_GT(run(t, w, c).step_time_us, run(t, w, no_costs()).step_time_us);
}

TEST(StepCosts, NvlinkEfficiencyIsWhatNcclsMaintainersStateForTheGpu) {
  // A100: 230 of 300 GB/s (nccl-tests#149); H100 and H200: 370 of 450 (nccl-tests#212); a GPU
  // with no stated figure takes H100's; a figure the user gives wins.
  EXPECT_DOUBLE_EQ(StepSimulator(topo::load_topology("dgx-a100")).costs().nvlink_efficiency, 230.0 / 300.0);
  EXPECT_DOUBLE_EQ(StepSimulator(topo::load_topology("fat-tree:nodes=2,gpu=a100-40gb")).costs().nvlink_efficiency,
                   230.0 / 300.0);
  EXPECT_DOUBLE_EQ(StepSimulator(topo::load_topology("dgx-h100")).costs().nvlink_efficiency, 370.0 / 450.0);
  EXPECT_DOUBLE_EQ(StepSimulator(topo::load_topology("fat-tree:nodes=2,gpu=h200")).costs().nvlink_efficiency,
                   370.0 / 450.0);
  EXPECT_DOUBLE_EQ(StepSimulator(topo::load_topology("dgx1-v100")).costs().nvlink_efficiency, kDefaultNvlinkEfficiency);
  StepCosts given;
  given.nvlink_efficiency = 0.9;
  EXPECT_DOUBLE_EQ(StepSimulator(topo::load_topology("dgx-a100"), given).costs().nvlink_efficiency, 0.9);
  // The A100's figure prices its NVLink: a ring inside one host at 230 GB/s a GPU, not 247.
  const topo::Topology a100 = topo::load_topology("dgx-a100");
  const Workload w = tensors(1, 64 * 1024 * 1024);
  StepCosts off = no_costs();
  off.nvlink_efficiency = -1;  // derived
  StepCosts stated = no_costs();
  stated.nvlink_efficiency = 230.0 / 300.0;
  EXPECT_DOUBLE_EQ(run(a100, w, off).step_time_us, run(a100, w, stated).step_time_us);
}

TEST(StepCosts, DefaultsAreResolvedAndPositive) {
  const topo::Topology t = topo::load_topology("fat-tree:nodes=2,gpus=4,nics=1,gpu=p100,transport=tcp");
  const StepSimulator sim(t);
  EXPECT_DOUBLE_EQ(sim.costs().fusion_copy_gbps, 732 * 0.8 / 2);  // P100 HBM2 x memory fraction / 2
  for (const StepCostField& f : step_cost_fields()) EXPECT_GT(sim.costs().*f.member, 0) << f.name;
}

TEST(StepCosts, SetByName) {
  StepCosts c;
  set_step_cost(c, "fusion_copy_gbps=900");
  set_step_cost(c, "negotiation_us_per_rank=2.5");
  set_step_cost(c, "tcp_efficiency=0.5");
  EXPECT_EQ(c.fusion_copy_gbps, 900);
  EXPECT_EQ(c.negotiation_us_per_rank, 2.5);
  EXPECT_EQ(c.tcp_efficiency, 0.5);
  for (const char* bad : {"bogus=1", "tensor_us", "tensor_us=", "tensor_us=abc", "tensor_us=-1", "interference=0.5",
                          "ib_efficiency=0", "ib_efficiency=1.5", "fusion_copy_gbps=0", "launch_us=inf"}) {
    EXPECT_THROW(set_step_cost(c, bad), Error) << bad;
  }
  try {
    set_step_cost(c, "bogus=1");
    FAIL() << "bogus=1 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown cost 'bogus' (known: fusion_copy_gbps,"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace colltune::sim
