// The GPU generation table and the per-layer-kind compute model built on it.
#include <gtest/gtest.h>

#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/topology/hardware.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

TEST(Gpus, EveryGpuHasRatesForItsAmpPrecision) {
  for (const topo::GpuSpec& g : topo::gpu_table()) {
    const Precision amp = parse_precision(g.amp_precision());
    EXPECT_GT(peak_tflops(g, amp), 0) << g.name;
    EXPECT_GE(peak_tflops(g, Precision::tf32), peak_tflops(g, Precision::fp32)) << g.name;
    EXPECT_GE(peak_tflops(g, Precision::amp), peak_tflops(g, Precision::tf32)) << g.name;
    const ComputeRates r = compute_rates(g, amp);
    EXPECT_GT(r.conv_tflops, 0) << g.name;
    EXPECT_GT(r.memory_gbps, 0) << g.name;
    // Every GPU of the hardware table has fitted (or shared) fractions at every precision it has.
    for (Precision p : {Precision::fp32, Precision::tf32, amp}) {
      const AchievedFractions f = achieved_fractions(g, p);
      EXPECT_GT(f.matmul, 0) << g.name;
      EXPECT_LE(f.matmul, 1) << g.name;
      EXPECT_GT(f.memory, 0) << g.name;
      EXPECT_LE(f.memory, 1) << g.name;
      EXPECT_GT(f.conv, 0) << g.name;
      EXPECT_LE(f.conv, p == Precision::fp32 || g.peak.tf32 == 0 ? 2.25 : 1.0) << g.name;  // Winograd in fp32 only
    }
  }
}

TEST(Gpus, PrecisionNamesAndDefaults) {
  EXPECT_EQ(parse_precision("amp"), Precision::amp);
  EXPECT_EQ(parse_precision("fp16"), Precision::amp);  // the hardware table's amp_precision
  EXPECT_EQ(to_string(Precision::amp), "amp");
  EXPECT_EQ(default_precision(topo::find_gpu("p100")), Precision::fp32);  // no tensor cores
  EXPECT_EQ(default_precision(topo::find_gpu("v100")), Precision::amp);
  EXPECT_EQ(default_precision(topo::find_gpu("h100")), Precision::amp);
  try {
    parse_precision("fp8");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown precision 'fp8' (valid: fp32, tf32, amp, bf16)");
  }
  // amp and bf16 run on the same tensor cores at the same peak: the same fractions and time.
  EXPECT_DOUBLE_EQ(parse_profile_spec("gpt2:precision=amp", "a100").forward_us,
                   parse_profile_spec("gpt2:precision=bf16", "a100").forward_us);
  // tf32 on a GPU without TF32 is fp32 math, fractions included.
  EXPECT_DOUBLE_EQ(parse_profile_spec("resnet50:precision=tf32", "v100").forward_us,
                   parse_profile_spec("resnet50:precision=fp32", "v100").forward_us);
}

TEST(Gpus, Bf16OnAGpuWithoutItIsRefused) {
  try {
    compute_rates(topo::find_gpu("v100"), Precision::bf16);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "precision bf16: the Tesla V100 SXM2 (v100) has no bf16 (use amp or fp32)");
  }
  EXPECT_THROW(parse_profile_spec("resnet50:precision=bf16", "p100"), Error);
  EXPECT_DOUBLE_EQ(peak_tflops(topo::find_gpu("v100"), Precision::tf32), 15.7);  // no TF32: fp32 math
}

TEST(Gpus, UnknownNameListsTheKnownOnes) {
  try {
    topo::find_gpu("x100", "gpu=x100");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "gpu=x100: unknown GPU 'x100' (known: " + topo::known_gpus() + ")");
    EXPECT_NE(topo::known_gpus().find("p100, v100, rtx2080ti, a100"), std::string::npos);
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
  const AchievedFractions f100 = achieved_fractions(a100, Precision::bf16);
  const double conv = 1e9 / (312 * f100.conv * 1e6);
  const double fc = 2e9 / (312 * f100.matmul * 1e6);
  const double norm = 1e8 * 2 / (2039 * f100.memory * 1e3);
  EXPECT_DOUBLE_EQ(w.forward_us, conv + fc + norm);
  EXPECT_DOUBLE_EQ(w.backward_us, 2 * (conv + fc + norm));
  // fp32 on the same GPU: 19.5 TFLOP/s, its fp32 fractions and 4-byte activations.
  const AchievedFractions f32 = achieved_fractions(a100, Precision::fp32);
  const Workload f = make_workload(arch, 1, compute_rates(a100, Precision::fp32));
  EXPECT_DOUBLE_EQ(f.forward_us, 1e9 / (19.5 * f32.conv * 1e6) + 2e9 / (19.5 * f32.matmul * 1e6) +
                                     1e8 * 4 / (2039 * f32.memory * 1e3));
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
