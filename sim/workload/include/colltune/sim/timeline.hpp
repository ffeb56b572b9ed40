#pragma once
// Import of a Horovod timeline (the Chrome-trace JSON Horovod writes to the file named by
// HOROVOD_TIMELINE) into a workload, so a job profiled once can be simulated on any topology.
//
// What Horovod writes (horovod/common/timeline.cc): a JSON array of trace events; every tensor
// is a "process" (pid) named by a "process_name" metadata event; per tensor, "B"/"E" pairs
// for NEGOTIATE_ALLREDUCE (negotiation: ticks "X" named by rank inside it), the top-level op
// (ALLREDUCE) and its activities (QUEUE, MEMCPY_IN_FUSION_BUFFER, NCCL_ALLREDUCE, ...); the
// "E" that closes the top-level op carries args {"dtype": "float32", "shape": "[64, 3, 7, 7]"}.
// "i" events mark CYCLE_START. The writer keeps the file a valid array after every event, but a
// killed job can leave it cut short: a missing ']' or a half-written last event is repaired.
//
// Mapping (docs/workload-format.md):
// - only gradient allreduces count: tensors with a NEGOTIATE_ALLREDUCE or ALLREDUCE event in a
//   dtype colltune simulates. Every other operation (the parameter broadcasts at start-up,
//   hvd.broadcast_object's uint8 broadcast, allgathers, an allreduce of a uint8 metric) is left
//   out, never an error, and listed in TimelineImport::left_out and a note;
// - ready time = the tensor's first NEGOTIATE_ALLREDUCE start (its first ALLREDUCE start when it
//   has none) minus the earliest such time over all tensors;
// - size = product of the shape of any of its op-closing events, dtype from the same event;
//   a tensor with no shape anywhere is assumed to be fp32 with the median element count of the
//   tensors that have one (counted in TimelineImport::assumed_sizes; an error if none has one);
// - backward_us = the last ready time unless given (the part of the backward pass before the
//   first gradient is invisible in a timeline);
// - forward_us, unless given: when the first tensor's ALLREDUCE appears a second time, the step
//   period minus the end of the first step's last allreduce (everything outside the backward
//   pass and its communication: forward, optimizer, input); otherwise 0.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/sim/workload.hpp"

namespace colltune::sim {

struct TimelineImportOptions {
  double forward_us = -1;   // < 0: estimate as described above
  double backward_us = -1;  // < 0: the last ready time
};

// A timed activity of the run, as measured: NEGOTIATE_ALLREDUCE, MEMCPY_IN_FUSION_BUFFER,
// NCCL_ALLREDUCE or MEMCPY_OUT_FUSION_BUFFER, once per fused buffer (the tensors that show it
// with the same start and end), times from the first tensor's readiness.
struct TimelineActivity {
  std::string name;
  double start_us = 0;
  double end_us = 0;
  std::size_t bytes = 0;    // of the tensors sharing it
  std::size_t tensors = 0;
};

struct TimelineImport {
  Workload workload;
  std::size_t assumed_sizes = 0;   // tensors whose size was assumed (no shape in the timeline)
  std::size_t steps_seen = 0;      // ALLREDUCE occurrences of the first tensor
  bool repaired = false;           // the file was cut short and its tail was repaired
  std::vector<std::string> notes;  // human-readable remarks on assumptions
  // Operations left out, one per tensor track, in file order: "broadcast/fc.bias (broadcast of
  // float32)", "metrics/acc (allreduce of uint8)".
  std::vector<std::string> left_out;
  // The measured run: where each step began (the first tensor's ALLREDUCE starts, the first
  // at its readiness time) and every timed activity.
  std::vector<double> step_starts_us;
  std::vector<TimelineActivity> activities;
};

// Throws colltune::Error naming `source` and the offending event / field.
TimelineImport import_horovod_timeline_text(std::string_view text, std::string_view source,
                                            const TimelineImportOptions& options = {});
TimelineImport import_horovod_timeline(const std::filesystem::path& path, const TimelineImportOptions& options = {});

}  // namespace colltune::sim
