#pragma once
// The tuner's search space: the knobs a Horovod + NCCL user can set, each with the values the
// tuner tries. A knob pinned with `--fix knob=value` keeps that single value and is not searched.
//
// Knobs (names as `--fix` spells them):
//   fusion-threshold  bytes, 0 (no fusion) and 1 .. 256 MiB in powers of two (whole MB, as
//                     horovodrun's fusion_threshold_mb expects)
//   cycle-time        Horovod cycle, 0.1 .. 100 ms, log-spaced (3 per decade, includes 1 ms)
//   fp16              fp16 compression of fp32 gradients on the wire (on|off)
//   algorithm         a flat allreduce from the registry, or "auto" = the fastest per buffer size
//   chunk             pipelining chunk in bytes (0 = one chunk per block)
//   hierarchical      Horovod's hierarchical allreduce: intra-host reduce-scatter, `algorithm`
//                     across hosts, intra-host allgather (on|off)
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/sim/step_model.hpp"

namespace colltune::tuner {

inline constexpr std::string_view kAutoAlgorithm = "auto";

// One point of the space: everything a training job would be configured with.
struct Candidate {
  std::size_t fusion_threshold_bytes = 128 * MiB;
  double cycle_time_us = 1000.0;
  bool fp16 = false;
  std::string algorithm = "ring";
  std::size_t chunk_bytes = 0;
  bool hierarchical = false;
  bool operator==(const Candidate&) const = default;
};

// Horovod's defaults (128 MiB, 1 ms, no compression) over NCCL's ring: every result is
// reported as a speedup over this.
Candidate horovod_baseline();

// "fusion=64 MiB cycle=2.15 ms fp16=off algo=ring chunk=0 B hier=off"
std::string describe(const Candidate& candidate);

// The training-step model's configuration for a candidate. hierarchical=on maps to the registry's
// "hierarchical" algorithm with `algorithm` as the inner (cross-host) one; chunk bytes become
// elements of the wire type (fp16 when compressing).
sim::StepConfig to_step_config(const Candidate& candidate);

struct SearchSpace {
  std::vector<std::size_t> fusion_thresholds;
  std::vector<double> cycle_times_us;
  std::vector<bool> fp16;
  std::vector<std::string> algorithms;  // flat allreduce ids and/or "auto"
  std::vector<std::size_t> chunks;
  std::vector<bool> hierarchical;

  // The default space over the given flat algorithm ids ("auto" is added first).
  static SearchSpace defaults(const std::vector<std::string>& flat_algorithms);

  // Pins one knob: "cycle-time=5ms", "fusion-threshold=64MiB", "fp16=on", "algorithm=ring",
  // "chunk=1MiB", "hierarchical=off". Throws colltune::Error naming the knob and value.
  void fix(std::string_view assignment);
  bool is_fixed(std::string_view knob) const;

  // Every valid combination, in a fixed order (fusion-major). "auto" picks hierarchical per
  // buffer itself, so it is combined only with hierarchical=off.
  std::vector<Candidate> enumerate() const;
  std::size_t size() const { return enumerate().size(); }
  bool contains(const Candidate& candidate) const;

 private:
  std::vector<std::string> fixed_;
};

// Knob names accepted by fix(), for help texts.
const std::vector<std::string>& knob_names();

}  // namespace colltune::tuner
