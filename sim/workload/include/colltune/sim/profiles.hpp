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
// - each layer has a kind: convolution and matmul layers take FLOPs / (the GPU's peak at the
//   compute precision x the kind's achieved fraction); memory-bound layers (norms, embedding
//   lookups) take the activation bytes they read and write / (memory bandwidth x its fraction);
//   the GPU figures come from topo::gpu_table(), the fractions per GPU, precision and kind from
//   the fit to published single-GPU training throughput (compute_fit.hpp). `tflops=` replaces
//   all that with one rate for every FLOP and free memory-bound layers.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/collectives/dtype.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::sim {

// What limits a layer's time: tensor-core/FMA throughput for convolutions and matrix
// products, device memory bandwidth for element-wise layers.
enum class LayerKind { convolution, matmul, memory_bound };

struct ParamTensor {
  std::string name;       // PyTorch-style parameter name, e.g. "layer1.0.conv1.weight"
  std::size_t count = 0;  // elements
};

// One module in forward order: its parameters and the forward work it costs per sample.
struct Layer {
  std::string name;
  std::vector<ParamTensor> params;
  double forward_flops = 0;  // per sample (image or sequence); convolution and matmul layers
  LayerKind kind = LayerKind::matmul;
  double forward_elems = 0;  // memory-bound layers: activation elements read + written per sample
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

// One sample's forward work by layer kind: FLOPs of convolution and matmul layers, activation
// elements read and written by memory-bound layers.
struct KindWork {
  double conv_flops = 0;
  double matmul_flops = 0;
  double memory_elems = 0;
};
KindWork work_by_kind(const ModelArch& arch);

// The precision the layers compute in (not the gradients' dtype): fp32, tf32 (TF32 tensor
// cores), amp (automatic mixed precision in fp16 on tensor cores) or bf16 (mixed precision in
// bf16). Mixed precision keeps fp32 master weights and gradients, so the precision never
// changes the bytes allreduced (the profile's `dtype=` does).
enum class Precision { fp32, tf32, amp, bf16 };
std::string_view to_string(Precision precision);
// "fp32", "tf32", "amp" (or "fp16", the hardware table's name for it), "bf16"; throws
// colltune::Error naming the valid ones.
Precision parse_precision(std::string_view name);
// What a GPU's published training results use (docs/step-model.md): fp32 on a GPU without
// tensor cores (its amp_precision is fp32), amp on every other.
Precision default_precision(const topo::GpuSpec& gpu);
// One line saying which precision a workload computes in and why ("amp (mixed fp16, fp32
// gradients; the a100's default: its published results are mixed precision)").
std::string describe_precision(const topo::GpuSpec& gpu, Precision precision, bool is_default);

// Achieved rates a workload is timed at.
struct ComputeRates {
  double conv_tflops = 0;
  double matmul_tflops = 0;
  double memory_gbps = 0;          // 0: memory-bound layers cost nothing
  std::size_t activation_bytes = 2;  // bytes per activation element
};
// The fractions of a GPU's peak a layer of each kind achieves in training: of the compute peak
// at the precision used (convolution, matmul) and of the memory bandwidth (memory-bound).
// Fitted per GPU and precision to published single-GPU training throughput
// (sim/workload/data/achieved_fractions.csv, written by colltune_fit_compute; a GPU or
// precision without published rows gets the fractions all GPUs share at that precision).
struct AchievedFractions {
  double conv = 0;
  double matmul = 0;
  double memory = 0;
  int rows = 0;  // published rows of this GPU and precision the fit used (0: the shared fractions)
};
AchievedFractions achieved_fractions(const topo::GpuSpec& gpu, Precision precision);
// The row of the fractions table a precision uses on a GPU: "fp32" (fp32, and tf32 on a GPU
// without TF32), "tf32", or "amp" (amp and bf16: the same tensor cores at the same peak).
std::string_view fraction_class(const topo::GpuSpec& gpu, Precision precision);
// Bytes per activation element: 4 in fp32 and tf32, 2 in the mixed precisions.
std::size_t activation_bytes(Precision precision);
// The GPU's dense peak at `precision` (the hardware table's; tf32 on a GPU without TF32 is
// fp32 math). colltune::Error for bf16 on a GPU without bf16.
double peak_tflops(const topo::GpuSpec& gpu, Precision precision);
// The GPU's peak at `precision` times each kind's achieved fraction.
ComputeRates compute_rates(const topo::GpuSpec& gpu, Precision precision);
// One rate for every FLOP, memory-bound layers free (the `tflops=` override).
ComputeRates uniform_rates(double tflops);

struct ProfileOptions {
  int batch = 0;                            // samples per GPU; 0 = the model's default
  int seq = 0;                              // transformers: tokens per sample; 0 = default
  double tflops = 0;                        // > 0: one sustained rate (uniform_rates)
  std::string gpu = "h100";                 // a topo::gpu_table() name
  std::string precision = {};               // empty: default_precision(gpu)
  std::string head = {};                    // BERT: "pretraining" (default) or "squad"
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

// The architecture of a built-in model; `seq` (transformers) 0 = the model's default; `head`
// (BERT only) "" or "pretraining" = the pretraining heads, "squad" = the SQuAD span head of
// fine-tuning. Throws colltune::Error for an unknown name, listing the known ones.
ModelArch model_architecture(std::string_view name, int seq = 0, std::string_view head = {});

// Turns an architecture into a workload (compute model above). Throws colltune::Error for a
// non-positive batch or rate.
Workload make_workload(const ModelArch& arch, int batch, const ComputeRates& rates,
                       coll::DType grad_dtype = coll::DType::f32);
// make_workload at uniform_rates(tflops).
Workload make_workload(const ModelArch& arch, int batch, double tflops,
                       coll::DType grad_dtype = coll::DType::f32);

Workload make_profile(std::string_view name, const ProfileOptions& options = {});

// "resnet50", "resnet50:batch=64,tflops=300", "bert-large:batch=16,seq=512,dtype=fp16",
// "vgg16:precision=fp32", "bert-large:seq=384,head=squad". Keys: batch, seq, tflops, precision,
// head, dtype. `gpu` is the GPU the layers are timed on (the topology's, see topo::gpu_of).
// Throws colltune::Error naming the bad key or value.
ProfileOptions parse_profile_options(std::string_view spec, std::string_view gpu = "h100");
Workload parse_profile_spec(std::string_view spec, std::string_view gpu = "h100");

}  // namespace colltune::sim
