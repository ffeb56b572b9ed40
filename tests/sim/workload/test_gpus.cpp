// The GPU generation table and the per-layer-kind compute model built on it.
#include <gtest/gtest.h>

#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/topology/gpus.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

TEST(Gpus, EveryGenerationIsPresentWithPositiveFigures) {
  for (const char* name : {"p100", "v100", "a100", "h100", "h200", "l40s"}) {
    const topo::GpuSpec& g = topo::find_gpu(name);
    EXPECT_EQ(g.name, name);
    for (double v : {g.fp32_tflops, g.tf32_tflops, g.half_tflops, g.memory_gbps, g.conv_fraction, g.matmul_fraction,
                     g.memory_fraction}) {
      EXPECT_GT(v, 0) << name;
    }
    EXPECT_LE(g.conv_fraction, 1);
    EXPECT_LE(g.matmul_fraction, 1);
    EXPECT_LE(g.memory_fraction, 1);
    EXPECT_GE(g.tf32_tflops, g.fp32_tflops) << name;
    EXPECT_GE(g.half_tflops, g.tf32_tflops) << name;
    EXPECT_NE(g.source.find("https://"), std::string::npos) << name;
    EXPECT_NO_THROW(parse_precision(g.amp_precision)) << name;
  }
  EXPECT_EQ(topo::gpu_table().size(), 6u);
}

TEST(Gpus, UnknownNameListsTheKnownOnes) {
  try {
    topo::find_gpu("x100", "gpu=x100");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "gpu=x100: unknown GPU 'x100' (known: p100, v100, a100, h100, h200, l40s)");
  }
  EXPECT_THROW(topo::load_topology("fat-tree:gpu=x100"), Error);
}

TEST(Gpus, PresetsRecordTheirGpu) {
  EXPECT_EQ(topo::gpu_of(topo::load_topology("dgx-h100")).name, "h100");
  EXPECT_EQ(topo::gpu_of(topo::load_topology("dgx-a100")).name, "a100");
  EXPECT_EQ(topo::gpu_of(topo::load_topology("dgx1-v100")).name, "v100");
  EXPECT_EQ(topo::gpu_of(topo::load_topology("pcie-box")).name, "l40s");
  EXPECT_EQ(topo::gpu_of(topo::load_topology("flat:ranks=4")).name, "h100");  // unknown: the default
  const topo::Topology p100 = topo::load_topology("fat-tree:nodes=2,gpus=4,nics=1,gpu=p100,transport=tcp");
  EXPECT_EQ(topo::gpu_of(p100).name, "p100");
  EXPECT_EQ(p100.transport, topo::NetTransport::tcp);
  EXPECT_EQ(p100.device(p100.device_of_rank(0)).compute_capability, 60);
  EXPECT_THROW(topo::load_topology("fat-tree:transport=udp"), Error);
}

TEST(Gpus, P100IsSlowerThanH100) {
  ProfileOptions p100;
  p100.gpu = "p100";
  ProfileOptions h100;
  h100.gpu = "h100";
  for (const char* model : {"resnet50", "vgg16", "bert-base"}) {
    const Workload slow = make_profile(model, p100);
    const Workload fast = make_profile(model, h100);
    EXPECT_GT(slow.forward_us, fast.forward_us) << model;
    EXPECT_GT(slow.backward_us, fast.backward_us) << model;
  }
}

TEST(Gpus, LayerTimesFollowTheirKind) {
  // One layer of each kind, timed by hand on an A100 in bf16 (312 TFLOP/s peak, 2039 GB/s).
  ModelArch arch;
  arch.name = "three";
  arch.layers = {{"conv", {{"conv.weight", 10}}, 1e9, LayerKind::convolution, 0},
                 {"fc", {{"fc.weight", 10}}, 2e9, LayerKind::matmul, 0},
                 {"norm", {{"norm.weight", 10}}, 0, LayerKind::memory_bound, 1e8}};
  const topo::GpuSpec& a100 = topo::find_gpu("a100");
  const Workload w = make_workload(arch, 1, compute_rates(a100, Precision::bf16));
  const double conv = 1e9 / (312 * a100.conv_fraction * 1e6);
  const double fc = 2e9 / (312 * a100.matmul_fraction * 1e6);
  const double norm = 1e8 * 2 / (2039 * a100.memory_fraction * 1e3);
  EXPECT_DOUBLE_EQ(w.forward_us, conv + fc + norm);
  EXPECT_DOUBLE_EQ(w.backward_us, 2 * (conv + fc + norm));
  // fp32 on the same GPU: 19.5 TFLOP/s and 4-byte activations.
  const Workload f = make_workload(arch, 1, compute_rates(a100, Precision::fp32));
  EXPECT_DOUBLE_EQ(f.forward_us, 3e9 / (19.5 * 0.4 * 1e6) + 1e8 * 4 / (2039 * a100.memory_fraction * 1e3));
}

TEST(Gpus, TflopsStillOverridesTheTable) {
  const Workload w = parse_profile_spec("resnet50:tflops=100", "p100");
  EXPECT_DOUBLE_EQ(w.forward_us, model_architecture("resnet50").forward_flops_per_sample() * 64 / 1e8);
  EXPECT_GT(parse_profile_spec("resnet50:precision=fp32", "h100").forward_us,
            parse_profile_spec("resnet50", "h100").forward_us);
  EXPECT_THROW(parse_profile_spec("resnet50:precision=fp8"), Error);
}

TEST(Gpus, EveryProfileLayerHasAKind) {
  for (const ProfileInfo& p : profiles()) {
    const ModelArch arch = model_architecture(p.name);
    for (const Layer& layer : arch.layers) {
      if (layer.kind == LayerKind::memory_bound) {
        EXPECT_GT(layer.forward_elems, 0) << p.name << " " << layer.name;
      } else {
        EXPECT_GT(layer.forward_flops, 0) << p.name << " " << layer.name;
      }
    }
  }
}

}  // namespace
}  // namespace colltune::sim
