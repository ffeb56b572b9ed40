// Horovod's hierarchical allreduce priced phase by phase (sim::HorovodHierarchical): each phase
// is the call Horovod makes, priced by the model that describes it, with expectations derived
// from the topology and NCCL's model rather than from the class's own arithmetic.
#include <gtest/gtest.h>

#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/horovod_hierarchical.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/priced_machine.hpp"

using namespace colltune;
using namespace colltune::sim;

namespace {

const topo::Topology& dgx_a100(int nodes) {
  static const topo::Topology two = topo::load_topology("dgx-a100:nodes=2");
  static const topo::Topology four = topo::load_topology("dgx-a100:nodes=4");
  return nodes == 2 ? two : four;
}

// The bandwidth of the link between two named devices (either direction's figures are equal in
// the presets).
double link_gbps(const topo::Topology& t, const std::string& from, const std::string& to) {
  const topo::Path p = t.device_route(*t.find_device(from), *t.find_device(to));
  EXPECT_EQ(p.links.size(), 1u) << from << " -> " << to;
  return t.link(p.links.at(0)).bandwidth_gbps;
}

// The NCCL price path of one host's eight GPUs, on the step model's machine.
std::unique_ptr<NcclPricer> one_host(const topo::Topology& t) {
  NcclOptions o;
  o.nranks = 8;
  return make_nccl_pricer(t, o);
}

}  // namespace

// DGX A100: two GPUs hang off each PCIe switch, whose one uplink to the CPU they share while all
// eight copy at once; the copy gets that share at the PCIe and pageable-copy efficiencies.
TEST(HorovodHierarchical, HostCopiesShareEachPcieSwitchUplink) {
  const topo::Topology& t = dgx_a100(2);
  const StepCosts costs;
  const HorovodHierarchical h(t, costs);
  const double uplink = link_gbps(t, "node0/pcie0", "node0/cpu0");
  EXPECT_NEAR(h.host_copy_gbps(), uplink / 2 * costs.pcie_efficiency * kPageableCopyEfficiency, 1e-9);

  const HorovodHierarchical pinned(t, costs, 2 * kPageableCopyEfficiency);
  const HorovodHierarchicalPhases slow = h.phases(64 * MiB, 4, 10);
  const HorovodHierarchicalPhases fast = pinned.phases(64 * MiB, 4, 10);
  EXPECT_NEAR(slow.to_host_us, 2 * fast.to_host_us, 1e-9 * slow.to_host_us);
  EXPECT_EQ(slow.to_host_us, slow.to_device_us);
  EXPECT_EQ(slow.cross_host_us, fast.cross_host_us);
}

// The NCCL calls are NCCL's own choice on one host's eight GPUs, for the whole shard set,
// priced by the NCCL price path (colltune's ring reduce-scatter and allgather).
TEST(HorovodHierarchical, NcclPhasesAreNcclsChoiceOnOneHost) {
  const topo::Topology& t = dgx_a100(2);
  const HorovodHierarchical h(t);
  const auto nccl = one_host(t);
  const std::size_t bytes = 32 * MiB;  // a multiple of 8 x 64 elements: no padding, no remainder
  const HorovodHierarchicalPhases p = h.phases(bytes, 4, 3);
  EXPECT_EQ(p.shard_elems, bytes / 4 / 8);
  EXPECT_EQ(p.remainder_elems, 0u);
  const NcclPrice rs = nccl->price(NcclColl::reduce_scatter, bytes);
  const NcclPrice ag = nccl->price(NcclColl::allgather, bytes);
  EXPECT_EQ(rs.schedule, "reduce_scatter_ring");
  EXPECT_EQ(ag.schedule, "allgather_ring");
  EXPECT_DOUBLE_EQ(p.reduce_scatter_us, rs.time_us);
  EXPECT_DOUBLE_EQ(p.allgather_us, ag.time_us);
  EXPECT_EQ(p.nccl_reduce_scatter, std::string(to_string(rs.nccl.algo)) + "/" + std::string(to_string(rs.nccl.proto)));
  // Every phase costs something, and the total is their sum.
  EXPECT_GT(p.to_host_us, 0);
  EXPECT_GT(p.cross_host_us, 0);
  EXPECT_DOUBLE_EQ(p.total_us(),
                   p.reduce_scatter_us + p.to_host_us + p.cross_host_us + p.to_device_us + p.allgather_us);
}

// A buffer of several tensors is padded to a multiple of local_size x 64 elements; a single
// tensor is not, and its remainder goes through ncclReduce and ncclBroadcast besides.
TEST(HorovodHierarchical, PaddingAndRemainderFollowHorovod) {
  const topo::Topology& t = dgx_a100(2);
  const HorovodHierarchical h(t);
  const std::size_t elems = 8 * 64 * 100 + 5;  // 5 past a multiple of the padding unit
  const HorovodHierarchicalPhases fused = h.phases(elems * 4, 4, 2);
  EXPECT_EQ(fused.shard_elems * 8, 8 * 64 * 101u);
  EXPECT_EQ(fused.remainder_elems, 0u);

  const HorovodHierarchicalPhases single = h.phases(elems * 4, 4, 1);
  EXPECT_EQ(single.shard_elems, (elems - 5) / 8);
  EXPECT_EQ(single.remainder_elems, 5u);
  const auto nccl = one_host(t);
  const std::size_t shard_bytes = single.shard_elems * 8 * 4;
  // The remainder's reduce and broadcast have no colltune schedule: NCCL's own time, said so.
  const NcclPrice reduce = nccl->price(NcclColl::reduce, 5 * 4);
  EXPECT_TRUE(reduce.schedule.empty());
  EXPECT_NE(reduce.fallback.find("no colltune schedule"), std::string::npos) << reduce.fallback;
  EXPECT_DOUBLE_EQ(single.reduce_scatter_us,
                   nccl->price(NcclColl::reduce_scatter, shard_bytes).time_us + reduce.time_us);
  EXPECT_DOUBLE_EQ(single.allgather_us, nccl->price(NcclColl::allgather, shard_bytes).time_us +
                                            nccl->price(NcclColl::broadcast, 5 * 4).time_us);
}

// The eight MPI_Allreduces of a host share its NICs: with one NIC per host the cross-host phase
// of a large buffer is several times slower than with eight, where each local rank has its own.
TEST(HorovodHierarchical, CrossHostPhaseSharesTheHostsNics) {
  const topo::Topology eight = topo::load_topology("fat-tree:nodes=4,gpus=8,nics=8,nic_gbit=200,gpu=a100");
  const topo::Topology one = topo::load_topology("fat-tree:nodes=4,gpus=8,nics=1,nic_gbit=200,gpu=a100");
  const double t8 = HorovodHierarchical(eight).phases(256 * MiB, 4, 10).cross_host_us;
  const double t1 = HorovodHierarchical(one).phases(256 * MiB, 4, 10).cross_host_us;
  EXPECT_GT(t1, 4 * t8);
  // More hosts move more ring steps but about the same bytes per rank: not cheaper.
  const topo::Topology sixteen = topo::load_topology("fat-tree:nodes=16,gpus=8,nics=8,nic_gbit=200,gpu=a100");
  EXPECT_GE(HorovodHierarchical(sixteen).phases(256 * MiB, 4, 10).cross_host_us, t8);
}

TEST(HorovodHierarchical, RefusesMachinesHorovodRunsOtherwise) {
  EXPECT_THROW(HorovodHierarchical(topo::load_topology("dgx-a100")), Error);  // one host: flag ignored
  try {
    HorovodHierarchical h(topo::load_topology("dgx-a100"));
    FAIL() << "one host accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one host"), std::string::npos) << e.what();
  }
  const HorovodHierarchical h(dgx_a100(2));
  EXPECT_THROW(h.phases(10, 4, 1), Error);  // not whole elements
}
