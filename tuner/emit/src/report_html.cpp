// report.html: one self-contained page (inline CSS and SVG, no scripts, no network).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "colltune/tuner/emit.hpp"
#include "colltune/tuner/knobs.hpp"
#include "colltune/common/svg.hpp"

namespace colltune::tuner {
namespace {

using svg::escape;

std::string num(double v, const char* format = "%.3g") {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string bytes_label(double b) { return format_bytes(static_cast<std::size_t>(b)); }

// A cell showing `shown` that also carries the exact value colltune.json holds under `key`
// (shortest round-trip form), so a reader of the page can check one against the other.
std::string json_cell(const char* key, double value, const std::string& shown) {
  char exact[32];
  const auto end = std::to_chars(exact, exact + sizeof exact, value).ptr;
  return "<td data-json=\"" + std::string(key) + "\" data-value=\"" + std::string(exact, end) + "\">" + shown + "</td>";
}

std::string config_cells(const Candidate& c) {
  std::string o;
  for (const Knob& k : knobs()) o += "<td>" + escape(k.cell(c)) + "</td>";
  return o;
}

// "<th>fusion</th><th>cycle</th>...": one column per knob.
std::string knob_headers() {
  std::string o;
  for (const Knob& k : knobs()) o += "<th>" + escape(std::string(k.column)) + "</th>";
  return o;
}

std::string summary_section(const TuneResult& r) {
  std::ostringstream o;
  o << "<h1>colltune: " << escape(r.model) << " on " << escape(r.topology) << "</h1>\n<p>" << r.ranks << " ranks on "
    << r.hosts << " hosts, " << escape(format_bytes(r.gradient_bytes)) << " of gradients per step. Runtime <b>"
    << coll::to_string(r.runtime) << "</b>, objective <b>"
    << escape(r.objective) << "</b>, strategy <b>" << to_string(r.strategy) << "</b> (seed " << r.seed << "), "
    << r.history.size() << " of " << r.space_size << " configurations evaluated in " << num(r.search_ms, "%.0f")
    << " ms.</p>\n<table><tr><th></th>" << knob_headers()
    << "<th>step time</th><th>speedup</th></tr>\n<tr><td><b>tuned</b></td>" << config_cells(r.best.candidate)
    << json_cell("predicted.step_time_ms", r.best_step.step_time_us / 1000.0, num(r.best.step_time_us / 1000.0) + " ms")
    << json_cell("speedup", r.speedup(), "<b>" + num(r.speedup(), "%.3f") + "x</b>")
    << "</tr>\n<tr><td>baseline</td>" << config_cells(r.baseline.candidate)
    << json_cell("baseline.step_time_ms", r.baseline.step_time_us / 1000.0,
                 num(r.baseline.step_time_us / 1000.0) + " ms")
    << "<td>1x</td></tr></table>\n<p>Baseline: " << escape(r.baseline_description)
    << ". Horovod's hierarchical_allreduce flag: <b>" << (r.hierarchical_allreduce ? "true" : "false")
    << "</b>.</p>\n<p>Predicted compute " << num(r.best_step.compute_us / 1000.0)
    << " ms, exposed communication " << num(r.best_step.exposed_comm_us / 1000.0) << " ms, scaling efficiency "
    << num(100.0 * r.best_step.scaling_efficiency, "%.1f") << "%.</p>\n";
  if (r.allreduce_step_us > 0)
    o << "<p>Allreduce instead (Horovod's defaults with NCCL's choice, same machine and model): "
      << num(r.allreduce_step_us / 1000.0) << " ms"
      << "; the tuned parameter-server step takes <b>" << num(r.best.step_time_us / r.allreduce_step_us, "%.2f")
      << "x</b> of it.</p>\n";
  return o.str();
}

std::string fp16_section(const TuneResult& r) {
  std::ostringstream o;
  const double off = r.best_fp16_off_us, on = r.best_fp16_on_us;
  o << "<h2>What fp16 compression costs</h2>\n<p>Accuracy: predicted rms relative error of each allreduced "
    << "gradient element <b>" << num(r.fp16.relative_error) << "</b> (" << escape(r.fp16.method) << "); limit "
    << "<code>--max-fp16-error</code> = " << num(r.fp16.max_allowed) << ": "
    << (r.fp16.accepted ? "accepted" : "<b>rejected</b>") << ". For comparison, fp32 rounding is about 6e-8.</p>\n<p>Speed: ";
  if (std::isfinite(off) && std::isfinite(on))
    o << "best step with fp16 " << num(on / 1000.0) << " ms, without " << num(off / 1000.0) << " ms ("
      << num(off / on, "%.3f") << "x).";
  else
    o << "only one setting was searched (pinned, or fp16 rejected by the error limit).";
  o << " Chosen: <b>" << (r.best.candidate.fp16 ? "fp16 on" : "fp16 off") << "</b>.</p>\n";
  return o.str();
}

std::string busbw_section(const TuneResult& r) {
  std::vector<svg::Series> series;
  for (const auto& c : r.busbw) {
    svg::Series s{c.label, {}, c.busbw_gbps};
    for (auto b : c.bytes) s.x.push_back(static_cast<double>(b));
    series.push_back(std::move(s));
  }
  return "<h2>Predicted bus bandwidth per algorithm</h2>\n<p>Analytical model, fp32, nccl-tests busbw factor "
         "2(p-1)/p.</p>\n" +
         svg::line_chart(series, "message size", "busbw (GB/s)", bytes_label);
}

std::string heatmap_section(const TuneResult& r) {
  const Heatmap& h = r.heatmap;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& grid : h.step_us)
    for (const auto& row : grid)
      for (double v : row)
        if (std::isfinite(v)) lo = std::min(lo, v / 1000.0), hi = std::max(hi, v / 1000.0);
  std::ostringstream o;
  o << "<h2>Step time (ms) over fusion threshold x cycle time</h2>\n<p>Analytical model; algorithm, chunk and "
    << "hierarchical as in the tuned configuration. Green is fast.</p>\n";
  for (int half = 0; half < 2; ++half) {
    svg::HeatmapSpec spec;
    spec.title = half ? "fp16 compression on" : "fp16 compression off";
    spec.x_title = "Horovod cycle time";
    spec.y_title = "fusion threshold";
    spec.unit = "ms";
    spec.lo = lo;
    spec.hi = hi;
    for (auto t : h.fusion_thresholds) spec.row_labels.push_back(format_bytes(t));
    for (auto c : h.cycle_times_us) spec.column_labels.push_back(num(c / 1000.0) + " ms");
    for (const auto& row : h.step_us[half]) {
      spec.values.emplace_back();
      for (double v : row) spec.values.back().push_back(v / 1000.0);
    }
    o << svg::heatmap(spec);
  }
  return o.str();
}

// Forward pass, backward pass and every fusion buffer's allreduce on one time axis from the
// start of the step (the step model times buffers from the start of the backward pass).
std::string timeline_section(const TuneResult& r) {
  const auto& step = r.best_step;
  const double fwd = r.forward_us;
  std::vector<svg::Bar> bars;
  bars.push_back({"compute", 0.0, fwd / 1000.0, "forward pass", 7});
  bars.push_back({"compute", fwd / 1000.0, step.compute_us / 1000.0, "backward pass", 8});
  double t_end = std::max(step.step_time_us, step.compute_us);
  int k = 0;
  for (const auto& b : step.buffers) {
    bars.push_back({"allreduce", (fwd + b.start_us) / 1000.0, (fwd + b.end_us) / 1000.0,
                    format_bytes(b.bytes) + ", " + std::to_string(b.tensors) + " tensors, " + b.algorithm + ", " +
                        num((b.end_us - b.start_us) / 1000.0) + " ms",
                    k++ % 2});
    t_end = std::max(t_end, fwd + b.end_us);
  }
  std::ostringstream o;
  o << "<h2>The fastest step's timeline</h2>\n<p>" << step.buffers.size() << " fusion buffers (hover a bar for its "
    << "size, tensors and algorithm); communication overlaps the backward pass.</p>\n"
    << svg::timeline(bars, t_end / 1000.0, "ms",
                     {{7, "forward pass"}, {8, "backward pass"}, {0, "allreduce of a fusion buffer"},
                      {1, "the next buffer"}});
  return o.str();
}

std::string top_row(const TuneResult& r, const Evaluation& e, const std::string& rank) {
  const bool chosen = e.candidate == r.best.candidate;
  std::ostringstream o;
  o << "<tr" << (chosen ? " style=\"font-weight:bold;background:#eef6ee\"" : "") << "><td>" << rank
    << (chosen ? " (chosen)" : "") << "</td>" << config_cells(e.candidate) << "<td>" << num(e.step_time_us / 1000.0)
    << " ms</td><td>" << num(r.baseline.step_time_us / e.step_time_us, "%.3f") << "x</td></tr>\n";
  return o.str();
}

// The fastest configurations, the chosen one marked; when the accuracy-first rules chose one
// outside the list (fp16 off within 0.1%), it is added below with its own row.
std::string top_section(const TuneResult& r) {
  std::ostringstream o;
  o << "<h2>Top configurations</h2>\n<table><tr><th>#</th>" << knob_headers()
    << "<th>step time</th><th>speedup</th></tr>\n";
  bool listed = false;
  int i = 1;
  for (const auto& e : r.top) {
    listed |= e.candidate == r.best.candidate;
    o << top_row(r, e, std::to_string(i++));
  }
  if (!listed) o << top_row(r, r.best, "");
  o << "</table>\n";
  return o.str();
}

std::string table_section(const TuneResult& r) {
  std::ostringstream o;
  o << "<h2>Algorithm per message size</h2>\n<p>What the tuned configuration's buffers run at each size"
    << (r.nccl_table.empty() ? "" : " (the rows nccl_tuner.conf hands NCCL)") << ".</p>\n"
    << "<table><tr><th>from</th><th>to</th><th>algorithm</th><th>protocol</th>"
    << "<th>chunk</th><th>predicted time at the largest sampled size</th></tr>\n";
  for (const auto& s : r.algo_table)
    o << "<tr><td>" << escape(format_bytes(s.min_bytes)) << "</td><td>" << escape(format_bytes(s.max_bytes))
      << "</td><td>" << escape(describe(s.choice)) << "</td><td>" << escape(s.protocol)
      << "</td><td>" << escape(format_bytes(s.choice.chunk_bytes)) << "</td><td>"
      << escape(format_time_us(s.time_us) + " at " + format_bytes(s.sampled_bytes))
      << "</td></tr>\n";
  o << "</table>\n";
  return o.str();
}

// What nccl_tuner.conf holds: the per-size (algorithm, protocol) rows the plugin applies.
std::string nccl_table_section(const TuneResult& r) {
  std::ostringstream o;
  o << "<h2>The table behind nccl_tuner.conf</h2>\n";
  if (r.nccl_table.empty()) {
    o << "<p>No rows: NCCL keeps its own choice at every size. " << escape(r.no_nccl_rows) << ".</p>\n";
    return o.str();
  }
  o << "<p>colltune's NCCL tuner plugin applies these rows for " << r.hosts << " nodes, " << r.ranks
    << " ranks; other sizes keep NCCL's own choice. The gain is colltune's price of NCCL's own pick over the "
    << "row's, at the largest size sampled in the range.</p>\n<table><tr><th>from</th><th>to</th><th>NCCL algorithm"
    << "</th><th>protocol</th><th>priced by</th><th>predicted time at the largest sampled size</th>"
    << "<th>NCCL's own pick</th><th>predicted gain</th></tr>\n";
  for (const auto& s : r.nccl_table) {
    char gain[32] = "";
    if (s.nccl_pick_us > 0) std::snprintf(gain, sizeof gain, "%.1f%%", 100 * (s.nccl_pick_us / s.time_us - 1));
    o << "<tr><td>" << escape(format_bytes(s.min_bytes)) << "</td><td>" << escape(format_bytes(s.max_bytes))
      << "</td><td>" << escape(s.nccl_algorithm) << "</td><td>" << escape(s.protocol) << "</td><td>"
      << escape(s.choice.algorithm) << "</td><td>" << escape(format_time_us(s.time_us) + " at " + format_bytes(s.sampled_bytes))
      << "</td><td>" << escape(s.nccl_pick_us > 0 ? format_time_us(s.nccl_pick_us) : "") << "</td><td>" << gain
      << "</td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

}  // namespace

std::string emit_report_html(const TuneResult& r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>colltune report: "
    << escape(r.model) << " on " << escape(r.topology) << "</title>\n<style>body{font-family:sans-serif;margin:2em}"
    << "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
    << "text-align:right}th{background:#f4f4f4}svg{display:block;margin:1em 0}</style></head><body>\n"
    << summary_section(r) << fp16_section(r) << busbw_section(r) << heatmap_section(r) << timeline_section(r)
    << top_section(r) << table_section(r) << nccl_table_section(r) << "</body></html>\n";
  return o.str();
}

}  // namespace colltune::tuner
