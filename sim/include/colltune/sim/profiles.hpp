#pragma once
// Built-in model profiles: the gradient tensors of real architectures, derived layer by layer
// by code (conv weights, batch-norm scale/shift, linear layers, embeddings, layer norms,
// attention projections), so parameter counts equal the published totals.
//
// Compute model (documented in docs/step-model.md):
// - forward FLOPs count the multiply-adds of convolutions, linear layers and attention score
//   products (2 FLOPs per multiply-add; a convolution costs 2*k*k*cin*cout per output pixel);
//   element-wise work (norms, activations, pooling) is not counted;
// - backward = 2 x forward, layer by layer, run in reverse layer order; a layer's gradients
//   are ready when its backward work is done, so ready times grow with the backward FLOPs
//   done so far;
// - time = FLOPs / (tflops * 1e12) per GPU at `batch` samples per GPU.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/collectives/dtype.hpp"
#include "colltune/sim/workload.hpp"

namespace colltune::sim {

// H100 SXM dense BF16 tensor-core peak, TFLOP/s.
inline constexpr double kH100DenseBf16Tflops = 989.4;
// Default sustained GPU throughput: 40% of that peak (model FLOPs utilisation typical of
// well-tuned data-parallel training).
inline constexpr double kDefaultTflops = 0.4 * kH100DenseBf16Tflops;

struct ParamTensor {
  std::string name;       // PyTorch-style parameter name, e.g. "layer1.0.conv1.weight"
  std::size_t count = 0;  // elements
};

// One module in forward order: its parameters and the forward FLOPs it costs per sample.
struct Layer {
  std::string name;
  std::vector<ParamTensor> params;
  double forward_flops = 0;  // per sample (image or sequence)
};

struct ModelArch {
  std::string name;
  std::string description;
  int default_batch = 0;  // per GPU
  int seq = 0;            // tokens per sample (transformers; 0 for CNNs)
  std::vector<Layer> layers;
  std::size_t total_params() const;
  double forward_flops_per_sample() const;
};

struct ProfileOptions {
  int batch = 0;                            // samples per GPU; 0 = the model's default
  int seq = 0;                              // transformers: tokens per sample; 0 = default
  double tflops = kDefaultTflops;           // sustained GPU throughput
  coll::DType grad_dtype = coll::DType::f32;  // dtype of the gradients that are allreduced
};

struct ProfileInfo {
  std::string name;
  std::string description;
};
// The built-in profiles, in a fixed order.
const std::vector<ProfileInfo>& profiles();
// True when the part of `spec` before ':' names a built-in profile.
bool is_profile_spec(std::string_view spec);

// The architecture of a built-in model; `seq` (transformers) 0 = the model's default.
// Throws colltune::Error for an unknown name, listing the known ones.
ModelArch model_architecture(std::string_view name, int seq = 0);

// Turns an architecture into a workload (compute model above). Throws colltune::Error for a
// non-positive batch or throughput.
Workload make_workload(const ModelArch& arch, int batch, double tflops,
                       coll::DType grad_dtype = coll::DType::f32);

Workload make_profile(std::string_view name, const ProfileOptions& options = {});

// "resnet50", "resnet50:batch=64,tflops=300", "bert-large:batch=16,seq=512,dtype=fp16".
// Keys: batch, seq, tflops, dtype. Throws colltune::Error naming the bad key or value.
Workload parse_profile_spec(std::string_view spec);

}  // namespace colltune::sim
