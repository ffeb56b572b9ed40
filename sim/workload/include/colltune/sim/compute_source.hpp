#pragma once
// Where a workload's compute time comes from, and the one entry point step, tune and sweep load
// a workload through: a built-in profile timed by the fitted table (profiles.hpp) at a precision,
// or a measured throughput in its place; a workload JSON or a Horovod timeline as given.
#include <string>
#include <vector>

#include "colltune/sim/workload.hpp"

namespace colltune::sim {

struct ComputeRequest {
  std::string gpu = "h100";           // the topology's GPU (topo::gpu_of): a topo::gpu_table() name
  std::string precision;              // --precision; empty: the model spec's precision=, else the GPU's default
  double measured_samples_per_s = 0;  // --measured-throughput (images or sequences per second per GPU); 0: none
};

struct LoadedWorkload {
  Workload workload;
  // One line saying where the compute time comes from ("published-throughput fit: a100, amp
  // ...", "measured: ...", "Horovod timeline: ...").
  std::string compute;
  std::string precision;            // the precision the profile computes in ("" for a file)
  double samples_per_s = 0;         // one GPU's training throughput at that compute (0 for a file)
  std::vector<std::string> notes;   // assumptions made importing a timeline
};

// Loads SPEC (profile, workload JSON or Horovod timeline: see load_workload) with `request`.
// A measured throughput replaces the profile's compute (forward, backward and every ready time
// scaled together) and wins over the table. Throws colltune::Error for a precision or measured
// throughput given with a workload file (its compute is given: a timeline's is measured), for a
// precision that differs from the spec's precision=, for tflops= together with either, for an
// unknown precision, and for a measured throughput <= 0, not finite, or above 10x the GPU's
// peak at the precision (in the model's FLOPs: 3 x forward per sample).
LoadedWorkload load_workload(const std::string& spec, const ComputeRequest& request);

}  // namespace colltune::sim
