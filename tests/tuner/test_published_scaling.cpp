// Horovod's published scaling on its 2017 cluster (tests/data/horovod-published/efficiency.csv:
// the README's 16-, 128- and 512-GPU efficiencies on Pascal GPUs over 25 Gbit/s RoCE), predicted
// by the step model with its compute from the published-throughput fit and its interference from
// a published measurement (neither fitted to these figures), and Horovod as it ran then: NCCL's
// ring (NCCL 2.0 had no other), a 64 MiB fusion buffer and a 5 ms cycle (Horovod's defaults
// before v0.21). docs/step-model.md has the table.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "colltune/sim/compute_source.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/tuner/runtime_model.hpp"

namespace colltune::tuner {
namespace {

constexpr double kTolerancePoints = 5;

// The 2017 cluster: `servers` servers of 4 P100 on PCIe, one 25 Gbit/s RoCE NIC each.
std::string cluster(int servers) {
  return "fat-tree:nodes=" + std::to_string(servers) + ",gpus=4,nics=1,nic_gbit=25,nvlink=0,gpu=p100,transport=roce";
}

double predicted_efficiency(const std::string& model, int servers) {
  const topo::Topology t = topo::load_topology(cluster(servers));
  sim::ComputeRequest request;
  request.gpu = "p100";
  const sim::Workload w = sim::load_workload(model, request).workload;
  Candidate c;
  c.fusion_threshold_bytes = 64 * MiB;
  c.cycle_time_us = 5000;
  c.algorithm = "ring";
  const RuntimeModel horovod(t, coll::Runtime::horovod);
  return 100 * sim::StepSimulator(t).run(w, horovod.step_config(c)).scaling_efficiency;
}

struct Published {
  std::string model;
  int servers = 0;
  double efficiency = 0;
};

std::vector<Published> published() {
  std::ifstream in(std::string(COLLTUNE_TEST_DATA) + "/horovod-published/efficiency.csv");
  std::vector<Published> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string cell; f.size() < 6 && std::getline(cells, cell, ',');) f.push_back(cell);
    out.push_back({f[0], std::stoi(f[2]), std::stod(f[5])});
  }
  return out;
}

TEST(PublishedScaling, HorovodReadmeWithinFivePoints) {
  const std::vector<Published> rows = published();
  ASSERT_EQ(rows.size(), 9u);
  std::map<std::pair<std::string, int>, double> predicted;
  for (const Published& p : rows) {
    const double e = predicted_efficiency(p.model, p.servers);
    predicted[{p.model, p.servers}] = e;
    EXPECT_LE(std::abs(e - p.efficiency), kTolerancePoints)
        << p.model << " on " << 4 * p.servers << " GPUs: predicted " << e << " %, published " << p.efficiency << " %";
  }
  // VGG-16 (138 M parameters, fast 3x3 convolutions) scales worse than ResNet-101, as published.
  for (int servers : {4, 32, 128}) {
    const double vgg = predicted[{"vgg16", servers}];
    const double resnet = predicted[{"resnet101", servers}];
    EXPECT_LT(vgg, resnet - 5) << 4 * servers << " GPUs";
  }
}

}  // namespace
}  // namespace colltune::tuner
