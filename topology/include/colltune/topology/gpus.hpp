#pragma once
// GPU generations as data: the figures the step model times layers with (peak dense
// throughput per precision, memory bandwidth, achieved fractions per layer kind) and the ones a
// preset builds a server from (compute capability, PCIe generation). Every figure's source is
// in gpus.cpp and docs/step-model.md.
//
// It lives in topology/ because presets take `gpu=NAME` and set the GPU's compute capability,
// reduce rate and PCIe generation from it; sim/ reads the same table to time the compute.
#include <string>
#include <string_view>
#include <vector>

namespace colltune::topo {

class Topology;

struct GpuSpec {
  std::string name;             // "p100", "v100", "a100", "h100", "h200", "l40s"
  std::string description;      // the board the figures are for, e.g. "Tesla P100 SXM2 16GB"
  int compute_capability = 0;   // x10 + minor: 60, 70, 80, 90, 89
  int pcie_gen = 0;             // the host interface generation (x16)
  // Peak dense throughput, TFLOP/s (no structured sparsity). tf32 equals fp32 where the GPU
  // has no TF32 tensor cores; half is fp16/bf16 on tensor cores (or the fp16 rate without them).
  double fp32_tflops = 0;
  double tf32_tflops = 0;
  double half_tflops = 0;
  double memory_gbps = 0;       // device memory bandwidth, GB/s
  // Fraction of the peak a layer of each kind achieves in training (convolution and matmul:
  // of the compute peak at the precision used; memory-bound: of the memory bandwidth).
  double conv_fraction = 0;
  double matmul_fraction = 0;
  double memory_fraction = 0;
  // The precision automatic mixed precision computes in on this GPU: "bf16" (Ampere and
  // later), "fp16" (Volta's tensor cores), "fp32" (Pascal: no tensor cores).
  std::string amp_precision;
  std::string source;           // URL of the data sheet or white paper
};

// The table, in generation order.
const std::vector<GpuSpec>& gpu_table();
// The names, comma-separated ("p100, v100, ...") for messages.
std::string known_gpus();
// Throws colltune::Error naming `what` (e.g. "preset fat-tree: gpu=x100") and listing the
// known names when `name` is not in the table.
const GpuSpec& find_gpu(std::string_view name, std::string_view what = "");
// The GPU of a topology: its `gpu` attribute when set, else the generation of rank 0's
// compute capability (60 p100, 70 v100, 80 a100, 89 l40s, 90 h100), else h100 (the default
// the step model has always assumed).
const GpuSpec& gpu_of(const Topology& topology);

}  // namespace colltune::topo
