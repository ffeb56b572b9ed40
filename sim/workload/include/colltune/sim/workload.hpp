#pragma once
// A training workload: the gradient tensors of one step, when each becomes ready during the
// backward pass, and the compute time around them.
//
// Workloads come from three places: built-in model profiles (profiles.hpp), the versioned JSON
// workload format (docs/workload-format.md, read and written here), and Horovod timelines
// (timeline.hpp). load_workload() accepts any of them by name or file.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/collectives/dtype.hpp"

namespace colltune::sim {

struct GradTensor {
  std::string name;
  std::size_t count = 0;  // elements
  coll::DType dtype = coll::DType::f32;
  double ready_us = 0;    // time after the backward pass starts at which the gradient is ready
  std::size_t bytes() const { return count * coll::dtype_size(dtype); }
};

struct Workload {
  std::string name;
  double forward_us = 0;
  double backward_us = 0;
  std::vector<GradTensor> tensors;  // in the order they become ready
  std::size_t total_bytes() const;
  std::size_t total_params() const;
};

// The version of the JSON workload format this build reads and writes.
inline constexpr int kWorkloadFormatVersion = 1;

// Checks a workload: finite non-negative forward/backward times, at least one tensor, every
// ready time within [0, backward_us], tensor byte sizes (and their sum) that fit in size_t,
// ready times in non-decreasing order. Throws colltune::Error naming `source`, the field and
// the offending value.
void validate_workload(const Workload& workload, std::string_view source);

// The JSON workload format (docs/workload-format.md). Parsing sorts tensors by ready time
// (stable) and validates; `source` names the input in error messages.
Workload parse_workload_json(std::string_view text, std::string_view source);
Workload load_workload_json(const std::filesystem::path& path);
std::string workload_to_json(const Workload& workload);

// SPEC is a model profile ("resnet50", "bert-large:batch=16,seq=512"), a JSON workload file or
// a Horovod timeline file (recognised by content: a top-level array or "traceEvents").
// Throws colltune::Error for an unknown model name or a bad file. When `notes` is given, the
// assumptions made importing a timeline are appended to it (see timeline.hpp). A profile's
// layers are timed on `gpu` (a topo::gpu_table() name: the topology's, see topo::gpu_of), at
// the GPU's default precision (compute_source.hpp takes a precision or a measured throughput).
// `timeline`, when given, is set to whether SPEC was a Horovod timeline.
Workload load_workload(const std::string& spec, std::vector<std::string>* notes = nullptr,
                       std::string_view gpu = "h100", bool* timeline = nullptr);

// The canonical names of the JSON format's dtypes: fp32, fp64, fp16, bf16, int32, int64.
std::string_view dtype_json_name(coll::DType dtype);

// The workload with its compute (forward, backward, gradient ready times) scaled by `factor`:
// the step of a rank `factor` times slower (stragglers, uneven data, failures).
Workload with_compute_scaled(const Workload& workload, double factor);

}  // namespace colltune::sim
