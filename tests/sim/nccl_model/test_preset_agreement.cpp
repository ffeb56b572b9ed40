// One machine described four ways (its preset, the preset exported to colltune JSON, an NCCL
// topology dump with :nodes=N, and fat-tree with matching parameters) is one machine to NCCL's
// model: the same algorithm, protocol and channels at every size, and bus bandwidths within 5 %.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "colltune/sim/nccl_model.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

const std::string kTopologies = std::string(COLLTUNE_TEST_DATA) + "/topology";

// The preset written as colltune JSON and read back.
topo::Topology exported(const std::string& preset) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("colltune-agreement-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << topo::to_json(topo::load_topology(preset));
  topo::Topology t = topo::load_topology(file.string());
  std::filesystem::remove(file);
  return t;
}

void expect_one_machine(const std::string& preset, const std::vector<std::string>& others) {
  std::vector<std::pair<std::string, topo::Topology>> machines;
  machines.emplace_back(preset, topo::load_topology(preset));
  machines.emplace_back("exported " + preset, exported(preset));
  for (const std::string& spec : others) machines.emplace_back(spec, topo::load_topology(spec));
  const NcclModel reference(machines.front().second);
  for (std::size_t bytes = std::size_t{1} << 10; bytes <= std::size_t{1} << 30; bytes <<= 2) {
    const NcclChoice want = reference.choose(NcclColl::allreduce, bytes);
    for (std::size_t m = 1; m < machines.size(); ++m) {
      const NcclChoice got = NcclModel(machines[m].second).choose(NcclColl::allreduce, bytes);
      const std::string where = machines[m].first + " vs " + preset + " at " + std::to_string(bytes) + " B";
      EXPECT_EQ(got.algo, want.algo) << where;
      EXPECT_EQ(got.proto, want.proto) << where;
      EXPECT_EQ(got.channels, want.channels) << where;
      EXPECT_NEAR(want.time_us / got.time_us, 1.0, 0.05) << where;  // busbw = bytes x factor / time
    }
  }
}

TEST(PresetAgreement, DgxH100) {
  expect_one_machine("dgx-h100:nodes=4", {kTopologies + "/dgx-h100-nccl-topo.xml:nodes=4", "fat-tree:nodes=4"});
}

TEST(PresetAgreement, DgxA100) {
  // fat-tree builds each GPU generation's reference server: on an A100, two GPUs and two NICs a
  // PCIe switch as in the DGX A100 (on the DGX H100's layout, a GPU alone with its NIC, NCCL's
  // pre-sm90 search finds no tree and runs everything on one or two channels). Its CPUs are
  // named: a DGX A100's EPYC 7742 is an AMD CPU to NCCL (its dump says so), fat-tree's default
  // Xeon 8480C an Intel one.
  expect_one_machine("dgx-a100:nodes=4", {kTopologies + "/dgx-a100-nccl-topo.xml:nodes=4",
                                          "fat-tree:nodes=4,gpu=a100,nvlink=300,nic_gbit=200,cpu=epyc-7742"});
}

TEST(PresetAgreement, FatTreeOnAnA100IsNotCutToOneChannel) {
  // The issue this guards: 32 nodes of A100s on fat-tree ran Ring on 2 channels (~21 GB/s bus
  // bandwidth at 256 MiB) against DGX A100's 16 channels.
  const NcclModel fat(topo::load_topology("fat-tree:nodes=32,gpu=a100,nvlink=300,cpu=epyc-7742"));
  const NcclModel dgx(topo::load_topology("dgx-a100:nodes=32"));
  EXPECT_EQ(fat.system().comm_channels, dgx.system().comm_channels);
  EXPECT_EQ(fat.choose(NcclColl::allreduce, 256u << 20).channels, 16);
  // A GPU alone on its PCIe switch is still what per_switch=1 asks for, and NCCL's model keeps
  // its answer for it.
  EXPECT_LE(NcclModel(topo::load_topology("fat-tree:nodes=32,gpu=a100,nvlink=300,per_switch=1")).system().comm_channels, 2);
}

}  // namespace
}  // namespace colltune::sim
