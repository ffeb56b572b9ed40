#pragma once
// The tuner's search space: the knobs a Horovod + NCCL user can set, each with the values the
// tuner tries. A knob pinned with `--fix knob=value` keeps that single value and is not searched.
//
// Knobs (names as `--fix` spells them):
//   fusion-threshold  bytes, 0 (no fusion) and 1 .. 256 MiB in powers of two; a pinned value
//                     must be a whole number of MiB too (horovodrun's fusion_threshold_mb is an
//                     integer count of MiB)
//   cycle-time        Horovod cycle, 0.1 .. 100 ms, log-spaced (3 per decade, includes 1 ms)
//   fp16              fp16 compression of fp32 gradients on the wire (on|off)
//   algorithm         a flat allreduce the runtime runs, "auto" = the fastest per buffer size,
//                     or "nccl" = NCCL's own choice (runtime_model.hpp)
//   chunk             pipelining chunk in bytes (0 = one chunk per block; colltune runtime only)
//   hierarchical      Horovod's hierarchical allreduce: intra-host reduce-scatter, `algorithm`
//                     across hosts, intra-host allgather (on|off); with "auto" on colltune's
//                     executors: per-host algorithms may be chosen per buffer
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/sim/step_model.hpp"

namespace colltune::tuner {

inline constexpr std::string_view kAutoAlgorithm = "auto";
// The registry entry the hierarchical knob runs: Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE path.
inline constexpr std::string_view kHierarchicalAlgorithm = "hierarchical";
// "NCCL picks its own algorithm and protocol" (runtimes nccl and horovod; runtime_model.hpp).
inline constexpr std::string_view kNcclChoice = "nccl";

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
// "hierarchical" algorithm with `algorithm` as the inner (cross-host) one, and "auto" to the
// fastest of flat and per-host algorithms per buffer; chunk bytes become elements of the wire
// type (fp16 when compressing).
sim::StepConfig to_step_config(const Candidate& candidate);

struct SearchSpace {
  std::vector<std::size_t> fusion_thresholds;
  std::vector<double> cycle_times_us;
  std::vector<bool> fp16;
  std::vector<std::string> algorithms;  // flat allreduce ids and/or "auto"
  std::vector<std::size_t> chunks;
  std::vector<bool> hierarchical;
  // The algorithm values hierarchical=on combines with (the cross-host algorithm, or "auto").
  std::vector<std::string> hierarchical_algorithms;
  // The runtime the space is for, named in --fix errors.
  std::string runtime = "colltune";
  // Why hierarchical=on is not offered, where it is not (the --fix error says it).
  std::string no_hierarchical_reason;

  // The default space over the given flat algorithm ids ("auto" is added first; hierarchical=on
  // over each flat one).
  static SearchSpace defaults(const std::vector<std::string>& flat_algorithms);

  // Pins one knob: "cycle-time=5ms", "fusion-threshold=64MiB", "fp16=on", "algorithm=ring",
  // "chunk=1MiB", "hierarchical=off". Throws colltune::Error naming the knob and value.
  void fix(std::string_view assignment);
  bool is_fixed(std::string_view knob) const;

  // Every valid combination, in a fixed order (fusion-major): hierarchical=on only with the
  // algorithms of hierarchical_algorithms.
  std::vector<Candidate> enumerate() const;
  std::size_t size() const { return enumerate().size(); }
  bool contains(const Candidate& candidate) const;

 private:
  std::vector<std::string> fixed_;
  bool valid(const std::string& algorithm, bool hierarchical) const;

 public:
  // Pins the algorithm knob (knobs.cpp): throws naming an id the runtime cannot run, or an
  // unknown one.
  void fix_algorithm(const std::string& what, const std::string& id);
};

// Knob names accepted by fix(), for help texts.
const std::vector<std::string>& knob_names();

}  // namespace colltune::tuner
