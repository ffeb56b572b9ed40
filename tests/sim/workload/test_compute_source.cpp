// Where a workload's compute comes from: the fitted table at a precision, or a measured
// throughput in its place (compute_source.hpp).
#include <gtest/gtest.h>

#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/compute_source.hpp"
#include "colltune/sim/profiles.hpp"

namespace colltune::sim {
namespace {

ComputeRequest on(const std::string& gpu, const std::string& precision = "", double measured = 0) {
  ComputeRequest r;
  r.gpu = gpu;
  r.precision = precision;
  r.measured_samples_per_s = measured;
  return r;
}

TEST(ComputeSource, TheTableAtTheGpusDefaultPrecision) {
  const LoadedWorkload l = load_workload("resnet50", on("a100"));
  EXPECT_EQ(l.precision, "amp");
  const Workload w = parse_profile_spec("resnet50:precision=amp", "a100");
  EXPECT_DOUBLE_EQ(l.workload.forward_us, w.forward_us);
  EXPECT_DOUBLE_EQ(l.samples_per_s, 64e6 / (w.forward_us + w.backward_us));
  EXPECT_EQ(load_workload("vgg16", on("p100")).precision, "fp32");
}

TEST(ComputeSource, MeasuredThroughputScalesEveryComputeTime) {
  const LoadedWorkload table = load_workload("resnet50:batch=32", on("v100"));
  const LoadedWorkload m = load_workload("resnet50:batch=32", on("v100", "", 800));
  EXPECT_NEAR(m.workload.forward_us + m.workload.backward_us, 32e6 / 800, 1e-9 * 4e4);
  const double factor = m.workload.backward_us / table.workload.backward_us;
  for (std::size_t i = 0; i < m.workload.tensors.size(); ++i)
    EXPECT_DOUBLE_EQ(m.workload.tensors[i].ready_us, table.workload.tensors[i].ready_us * factor);
  EXPECT_EQ(m.workload.total_bytes(), table.workload.total_bytes());  // the gradients do not change
  EXPECT_NE(m.compute.find("measured: 800 images/s per GPU"), std::string::npos) << m.compute;
}

TEST(ComputeSource, PrecisionChangesComputeNotGradients) {
  const LoadedWorkload amp = load_workload("bert-large", on("a100", "amp"));
  const LoadedWorkload tf32 = load_workload("bert-large", on("a100", "tf32"));
  EXPECT_GT(tf32.workload.forward_us, amp.workload.forward_us);
  EXPECT_EQ(tf32.workload.total_bytes(), amp.workload.total_bytes());  // fp32 master gradients
  EXPECT_EQ(amp.workload.total_bytes(), 4 * amp.workload.total_params());
}

TEST(ComputeSource, BadRequestsAreErrors) {
  EXPECT_THROW(load_workload("resnet50", on("a100", "fp8")), Error);
  EXPECT_THROW(load_workload("resnet50", on("v100", "bf16")), Error);
  EXPECT_THROW(load_workload("resnet50:precision=amp", on("a100", "tf32")), Error);
  EXPECT_THROW(load_workload("resnet50:tflops=100", on("a100", "tf32")), Error);
  EXPECT_THROW(load_workload("resnet50:tflops=100", on("a100", "", 500)), Error);
  EXPECT_THROW(load_workload("resnet50", on("a100", "", -1)), Error);
  // 10x the A100's 312 TFLOP/s in the model's FLOPs (3 x 8.2 GFLOP per image): ~127,000 images/s.
  EXPECT_NO_THROW(load_workload("resnet50", on("a100", "", 120000)));
  EXPECT_THROW(load_workload("resnet50", on("a100", "", 130000)), Error);
  EXPECT_THROW(load_workload(std::string(COLLTUNE_EXAMPLES) + "/workloads/example_workload.json", on("a100", "amp")),
               Error);
}

}  // namespace
}  // namespace colltune::sim
