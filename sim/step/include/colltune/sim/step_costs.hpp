#pragma once
// The named costs of the training-step model beyond the allreduce itself: Horovod's fusion
// copies, negotiation, per-tensor and per-launch overheads, the slowdown of compute that
// overlaps communication, and the fraction of each link class's bandwidth a collective gets.
// Every default, and where it comes from, is in docs/step-model.md.
#include <string>
#include <string_view>
#include <vector>

#include "colltune/common/parse.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

// The fraction of its memory bandwidth a GPU's streaming copy achieves (typical of copy kernels
// on HBM; no single source). Not the compute fit's memory fraction, which prices all the
// element-wise work of a layer through the norms' bytes (docs/step-model.md).
inline constexpr double kStreamingCopyFraction = 0.8;

// The NVLink efficiency of a GPU for which none is stated: H100's (370 of 450 GB/s).
inline constexpr double kDefaultNvlinkEfficiency = 370.0 / 450.0;

struct StepCosts {
  // Rate at which Horovod copies a tensor into the fusion buffer (and out after), GB/s of tensor
  // bytes. < 0: derived from the GPU (memory bandwidth x kStreamingCopyFraction / 2: each byte
  // is read once and written once).
  double fusion_copy_gbps = -1;
  // Per-cycle negotiation = negotiation_base_us + negotiation_us_per_rank x ranks.
  // base < 0: derived from the topology (the fastest 64-byte allreduce, the response cache's
  // bit-vector reduction).
  double negotiation_base_us = -1;
  double negotiation_us_per_rank = 1.0;
  double tensor_us = 0.5;    // per tensor in a buffer (Horovod's per-entry work and copy)
  double launch_us = 8.4;    // per allreduce launch (NCCL's Ring/Simple base latency)
  // Backward compute that overlaps communication runs this many times slower (1 = no effect).
  // The measured mean: compute kernels overlapped with collectives ran 18.9 % slower on average
  // (40 % at most) than alone, on 4 A100, H100, MI250 and MI210 training GPT and LLaMA (Lee et
  // al., arXiv:2507.03114). docs/step-model.md says where that differs from a machine priced here.
  double interference = 1.189;
  // Fraction of the link bandwidth a collective achieves, per link class; `net` links take
  // the topology's transport (ib, roce, tcp). nvlink_efficiency < 0: derived from the GPU (the
  // figure NCCL's maintainers state for it, else kDefaultNvlinkEfficiency; costs_on resolves it).
  double nvlink_efficiency = -1;
  double pcie_efficiency = 0.91;
  double ib_efficiency = 24.0 / 25.0;
  double roce_efficiency = 190.0 / 200.0;
  double tcp_efficiency = 22.5 / 32.0;
};

// One named cost: how the CLI and JSON spell it and what it may be.
struct StepCostField {
  std::string_view name;
  double StepCosts::*member;
  std::string_view unit;        // "GB/s", "us", "x", "fraction"
  std::string_view help;
  parse::Bounds range;          // what it may be: finite, and within the physical range
  bool derivable = false;       // < 0 means "derive it" (shown as "derived" when unresolved)
};
const std::vector<StepCostField>& step_cost_fields();
// The field called `name`; nullptr when there is none.
const StepCostField* find_step_cost_field(std::string_view name);

// Applies "name=value" (the CLI's --cost). Throws colltune::Error with one line naming the
// assignment: an unknown name (listing the known ones), a value that is not a number or out of
// range.
void set_step_cost(StepCosts& costs, std::string_view assignment);

// The efficiency that applies to links of `kind` on a network of `transport` (shm and sys
// links: 1, they are not collective transports the sources measured).
double link_efficiency(const StepCosts& costs, topo::LinkKind kind, topo::NetTransport transport);

}  // namespace colltune::sim
