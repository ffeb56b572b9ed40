// Built-in model profiles: parameter counts equal the published totals, FLOPs match the
// published multiply-add counts, ready times follow the backward pass.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::sim {
namespace {

struct Expected {
  const char* name;
  std::size_t params;
};

class ProfileParams : public ::testing::TestWithParam<Expected> {};

// Totals as reported by torchvision / Hugging Face for the same modules.
INSTANTIATE_TEST_SUITE_P(Published, ProfileParams,
                         ::testing::Values(Expected{"resnet50", 25'557'032}, Expected{"resnet101", 44'549'160},
                                           Expected{"resnet152", 60'192'808}, Expected{"vgg16", 138'357'544},
                                           Expected{"inception-v3", 23'834'568}, Expected{"bert-base", 110'106'428},
                                           Expected{"bert-large", 336'226'108}, Expected{"gpt2", 124'439'808},
                                           Expected{"gpt2-medium", 354'823'168}, Expected{"gpt2-large", 774'030'080},
                                           Expected{"gpt2-xl", 1'557'611'200}),
                         [](const auto& test) {
                           std::string n = test.param.name;
                           for (char& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

TEST_P(ProfileParams, ArchitectureAndWorkloadMatchPublishedCount) {
  const ModelArch arch = model_architecture(GetParam().name);
  EXPECT_EQ(arch.total_params(), GetParam().params);
  const Workload w = make_profile(GetParam().name);
  EXPECT_EQ(w.total_params(), GetParam().params);
  EXPECT_EQ(w.total_bytes(), 4 * GetParam().params);  // fp32 gradients by default
}

TEST_P(ProfileParams, ReadyTimesFollowTheBackwardPass) {
  const Workload w = make_profile(GetParam().name);
  ASSERT_FALSE(w.tensors.empty());
  EXPECT_GT(w.forward_us, 0);
  EXPECT_NEAR(w.backward_us, 2 * w.forward_us, 1e-9 * w.backward_us);
  double previous = 0;
  for (const GradTensor& t : w.tensors) {
    EXPECT_GE(t.ready_us, previous) << t.name;
    EXPECT_LE(t.ready_us, w.backward_us) << t.name;
    previous = t.ready_us;
  }
  EXPECT_DOUBLE_EQ(w.tensors.back().ready_us, w.backward_us);
  EXPECT_GT(w.tensors.front().ready_us, 0);  // the last layer's backward takes time too
  EXPECT_NO_THROW(validate_workload(w, GetParam().name));
}

TEST_P(ProfileParams, TensorNamesAreUnique) {
  const Workload w = make_profile(GetParam().name);
  std::set<std::string> names;
  for (const GradTensor& t : w.tensors) EXPECT_TRUE(names.insert(t.name).second) << t.name;
}

std::size_t params_without_prefix(const ModelArch& arch, const std::string& prefix) {
  std::size_t total = 0;
  for (const Layer& l : arch.layers)
    for (const ParamTensor& p : l.params)
      if (!p.name.starts_with(prefix)) total += p.count;
  return total;
}

TEST(Profiles, BertEncoderWithPoolerMatchesBertModel) {
  // Hugging Face BertModel (no pretraining heads): 335,141,888 / 109,482,240.
  EXPECT_EQ(params_without_prefix(model_architecture("bert-large"), "cls."), 335'141'888u);
  EXPECT_EQ(params_without_prefix(model_architecture("bert-base"), "cls."), 109'482'240u);
}

TEST(Profiles, ForwardFlopsMatchPublishedMultiplyAdds) {
  // ResNet-50: 4.09 GMACs, VGG-16: 15.47 GMACs per 224x224 image (2 FLOPs per MAC).
  EXPECT_NEAR(model_architecture("resnet50").forward_flops_per_sample() / 2e9, 4.09, 0.04);
  EXPECT_NEAR(model_architecture("vgg16").forward_flops_per_sample() / 2e9, 15.47, 0.05);
  // Inception-v3: 5.71 GMACs per 299x299 image (torchvision's figure, without the auxiliary
  // classifier, which runs only in training mode and is not in this profile).
  EXPECT_NEAR(model_architecture("inception-v3").forward_flops_per_sample() / 2e9, 5.71, 0.06);
  // GPT-2 XL: ~2 * params FLOPs per token plus attention products and the LM head.
  const ModelArch gpt = model_architecture("gpt2-xl");
  const double per_token = gpt.forward_flops_per_sample() / 1024;
  EXPECT_GT(per_token, 2.0 * 1.47e9);
  EXPECT_LT(per_token, 2.0 * 1.75e9);
}

TEST(Profiles, ResnetGradientOrderIsReverseLayerOrder) {
  const Workload w = make_profile("resnet50");
  EXPECT_EQ(w.tensors.front().name, "fc.bias");
  EXPECT_EQ(w.tensors[1].name, "fc.weight");
  EXPECT_EQ(w.tensors.back().name, "conv1.weight");
  EXPECT_EQ(w.tensors.size(), 161u);  // 53 convs, 53 batch norms x 2, fc x 2
}

TEST(Profiles, ComputeTimeScalesWithBatchAndThroughput) {
  const ModelArch arch = model_architecture("resnet50");
  const Workload a = make_workload(arch, 64, 100);
  const Workload b = make_workload(arch, 128, 100);
  const Workload c = make_workload(arch, 64, 200);
  EXPECT_DOUBLE_EQ(b.forward_us, 2 * a.forward_us);
  EXPECT_DOUBLE_EQ(c.backward_us, a.backward_us / 2);
  // 64 images x forward FLOPs at 100 TFLOP/s (1e8 FLOP per us).
  EXPECT_DOUBLE_EQ(a.forward_us, arch.forward_flops_per_sample() * 64 / 1e8);
}

TEST(Profiles, SpecOptions) {
  const Workload w = parse_profile_spec("resnet50:batch=32,tflops=100");
  EXPECT_DOUBLE_EQ(w.forward_us, model_architecture("resnet50").forward_flops_per_sample() * 32 / 1e8);
  const Workload h = parse_profile_spec("bert-large:seq=512,dtype=fp16");
  EXPECT_EQ(h.total_bytes(), 2 * h.total_params());
  EXPECT_GT(h.forward_us, make_profile("bert-large").forward_us * 4);  // 4x tokens, plus seq^2 attention
  EXPECT_TRUE(is_profile_spec("gpt2-xl:batch=4"));
  EXPECT_FALSE(is_profile_spec("resnet51"));
  // The default: an H100 in amp, convolutions at the fitted fraction of its 989.4 TFLOP/s, plus
  // the batch norms' memory traffic.
  const AchievedFractions f = achieved_fractions(topo::find_gpu("h100"), Precision::amp);
  const KindWork work = work_by_kind(model_architecture("resnet50"));
  const double flops_us = work.conv_flops * 64 / (f.conv * 989.4 * 1e6) + work.matmul_flops * 64 / (f.matmul * 989.4 * 1e6);
  const double memory_us = work.memory_elems * 2 * 64 / (f.memory * 3350 * 1e3);
  EXPECT_NEAR(make_profile("resnet50").forward_us, flops_us + memory_us, 1e-9 * flops_us);
}

TEST(Profiles, BadSpecsAreErrors) {
  for (const char* spec : {"resnet51", "resnet50:batch=0", "resnet50:batch=-4", "resnet50:batch=2x",
                           "resnet50:tflops=abc", "resnet50:tflops=0", "resnet50:color=red", "resnet50:batch",
                           "resnet50:seq=128", "bert-large:seq=513", "bert-large:dtype=int32", "gpt2:dtype=fp8"}) {
    EXPECT_THROW(parse_profile_spec(spec), Error) << spec;
  }
  try {
    parse_profile_spec("resnet50:batch=-4");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch=-4"), std::string::npos) << e.what();
  }
  try {
    parse_profile_spec("alexnet");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos) << e.what();  // lists known models
  }
}

}  // namespace
}  // namespace colltune::sim
