// A Horovod timeline beside the step model (compare.hpp): step time, communication per step,
// and the fusion-buffer copy rate the run achieved.
#include <cstdio>
#include <map>
#include <sstream>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/timeline.hpp"
#include "colltune/calibrate/compare.hpp"

namespace colltune::tuner {
namespace {

double per_step(double total, std::size_t steps) { return steps == 0 ? total : total / static_cast<double>(steps); }

std::string ms(double us) {
  char buf[32];
  if (us < 0) return "-";
  std::snprintf(buf, sizeof buf, "%.3f ms", us / 1e3);
  return buf;
}

std::string versus(double measured, double predicted) {
  if (measured <= 0 || predicted < 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "  (%+.1f%%)", 100 * (predicted / measured - 1));
  return buf;
}

}  // namespace

TimelineComparison compare_timeline(const topo::Topology& topology, const std::string& path,
                                    std::size_t fusion_threshold_bytes, double cycle_time_us) {
  const sim::TimelineImport run = sim::import_horovod_timeline(path);
  TimelineComparison c;
  c.source = path;
  c.steps = std::max<std::size_t>(run.step_starts_us.size(), 1);
  if (run.step_starts_us.size() >= 2)
    c.measured_step_us = (run.step_starts_us.back() - run.step_starts_us.front()) /
                         static_cast<double>(run.step_starts_us.size() - 1);

  const sim::StepSimulator simulator(topology);
  sim::StepConfig config;
  config.fusion_threshold_bytes = fusion_threshold_bytes;
  config.cycle_time_us = cycle_time_us;
  const sim::StepResult predicted = simulator.run(run.workload, config);
  c.predicted_step_us = predicted.step_time_us;
  c.predicted_buffers = predicted.buffers.size();
  c.model_copy_gbps = simulator.costs().fusion_copy_gbps;

  // Measured totals per activity, and the bytes the copies moved.
  std::map<std::string, double> total;
  double copy_bytes = 0, copy_us = 0;
  std::size_t allreduces = 0;
  for (const sim::TimelineActivity& a : run.activities) {
    total[a.name] += a.end_us - a.start_us;
    if (a.name == "NCCL_ALLREDUCE") ++allreduces;
    if (a.name.starts_with("MEMCPY_") && a.end_us > a.start_us) {
      copy_bytes += static_cast<double>(a.bytes);
      copy_us += a.end_us - a.start_us;
    }
  }
  c.measured_buffers_per_step = (allreduces + c.steps - 1) / c.steps;
  if (copy_us > 0) c.measured_copy_gbps = copy_bytes / copy_us / 1e3;

  // The model's counterparts: fused buffers' copies (in and out) and each buffer's time.
  double predicted_copies = 0, predicted_comm = 0;
  for (const sim::BufferRecord& b : predicted.buffers) {
    if (b.tensors > 1) predicted_copies += 2.0 * static_cast<double>(b.bytes) / (c.model_copy_gbps * 1e3);
    predicted_comm += b.end_us - b.start_us;
  }
  const double copies = total["MEMCPY_IN_FUSION_BUFFER"] + total["MEMCPY_OUT_FUSION_BUFFER"];
  c.parts.push_back({"fusion copies", per_step(copies, c.steps), predicted_copies});
  c.parts.push_back({"NCCL_ALLREDUCE", per_step(total["NCCL_ALLREDUCE"], c.steps), -1});
  c.parts.push_back({"copies + allreduce", per_step(copies + total["NCCL_ALLREDUCE"], c.steps), predicted_comm});
  c.parts.push_back({"NEGOTIATE_ALLREDUCE", per_step(total["NEGOTIATE_ALLREDUCE"], c.steps), -1});
  return c;
}

std::string timeline_comparison_text(const TimelineComparison& c) {
  std::ostringstream o;
  o << "\nHorovod timeline " << c.source << ": " << c.steps << " step" << (c.steps == 1 ? "" : "s")
    << " (per step, measured beside the step model)\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-22s %12s %12s\n", "", "measured", "predicted");
  o << line;
  std::snprintf(line, sizeof line, "  %-22s %12s %12s%s\n", "step time", ms(c.measured_step_us).c_str(),
                ms(c.predicted_step_us).c_str(), versus(c.measured_step_us, c.predicted_step_us).c_str());
  o << line;
  std::snprintf(line, sizeof line, "  %-22s %12zu %12zu\n", "allreduce buffers", c.measured_buffers_per_step,
                c.predicted_buffers);
  o << line;
  for (const auto& p : c.parts) {
    std::snprintf(line, sizeof line, "  %-22s %12s %12s%s\n", p.name.c_str(), ms(p.measured_us).c_str(),
                  ms(p.predicted_us).c_str(), versus(p.measured_us, p.predicted_us).c_str());
    o << line;
  }
  if (c.measured_step_us < 0) o << "  one step in the timeline: no step period to compare\n";
  if (c.measured_copy_gbps > 0) {
    std::snprintf(line, sizeof line,
                  "  fusion copies ran at %.1f GB/s, the model's %.1f GB/s: `--cost fusion_copy_gbps=%.1f` "
                  "prices the measured rate\n",
                  c.measured_copy_gbps, c.model_copy_gbps, c.measured_copy_gbps);
    o << line;
  }
  o << "  (NCCL_ALLREDUCE rows above: each fused buffer's allreduce beside its prediction)\n";
  return o.str();
}

}  // namespace colltune::tuner
