// colltune sweep's outputs (sweep.hpp): a text table, CSV, JSON and an HTML page of plots.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "colltune/common/finite.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/common/units.hpp"
#include "colltune/tuner/sweep.hpp"
#include "colltune/common/svg.hpp"

namespace colltune::tuner {
namespace {

std::string fmt(const char* format, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string config_text(const Candidate& c) {
  return "fusion " + format_bytes(c.fusion_threshold_bytes) + ", cycle " + format_time_us(c.cycle_time_us) +
         ", fp16 " + (c.fp16 ? "on" : "off") + ", " + c.algorithm + (c.hierarchical ? ", hierarchical" : "") +
         (c.chunk_bytes ? ", chunk " + format_bytes(c.chunk_bytes) : "");
}

std::string describe(const SweepResult& r, const SweepPoint& p) {
  std::string out;
  for (std::size_t a = 0; a < p.values.size(); ++a) out += (a ? " " : "") + r.spec.axes[a].key + "=" + p.values[a];
  return out;
}

nlohmann::ordered_json bottleneck_json(const sim::Bottleneck& b) {
  return {{"resource", b.resource},           {"description", b.description},
          {"rate_gbps", b.rate_gbps},         {"tuned_step_ms", b.time_us / 1000},
          {"twice_as_fast_ms", b.faster_us / 1000}, {"line", b.line()}};
}

std::string title(const SweepResult& r) {
  std::string varied;
  for (const SweepAxis& a : r.spec.axes) varied += (varied.empty() ? "" : " and ") + a.key;
  return r.spec.model + (r.spec.topology.empty() ? "" : " on " + r.spec.topology) + ", varying " + varied;
}

// Axes of names (GPUs, topologies, nvls=on/off): one bar per point at the defaults and one
// tuned, step time from 0.
std::string bars(const SweepResult& r) {
  std::vector<svg::Bar> out;
  double longest = 0;
  for (const SweepPoint& p : r.points) {
    const std::string lane = describe(r, p);
    out.push_back({lane + " defaults", 0, p.default_step_us / 1000, fmt("%.3f ms at the defaults", p.default_step_us / 1000), 0});
    out.push_back({lane + " tuned", 0, p.tuned_step_us / 1000,
                   fmt("%.3f ms tuned", p.tuned_step_us / 1000) + "; bottleneck: " + p.bottleneck.line(), 1});
    longest = std::max(longest, p.default_step_us / 1000);
  }
  return svg::timeline(out, longest, "ms, step time", {{0, "Horovod's defaults"}, {1, "tuned"}});
}

// The first axis's values as numbers, when all are positive numbers (plots need them).
bool numeric_axis(const SweepAxis& axis, std::vector<double>* out) {
  for (const std::string& v : axis.values) {
    const std::optional<double> x = parse::try_number(v);
    if (!x || !(*x > 0)) return false;
    out->push_back(*x);
  }
  return true;
}

std::string plain_label(double x) { return fmt("%g", x); }

// One chart over the first axis: a line at the defaults and one tuned per second-axis value.
std::string chart(const SweepResult& r, const std::vector<double>& xs, const char* y_title, bool efficiency) {
  const std::size_t stride = r.spec.axes.size() > 1 ? r.spec.axes[1].values.size() : 1;
  std::vector<svg::Series> series;
  for (std::size_t j = 0; j < stride; ++j) {
    const std::string suffix = stride > 1 ? ", " + r.spec.axes[1].key + "=" + r.spec.axes[1].values[j] : "";
    svg::Series defaults{"defaults" + suffix, xs, {}}, tuned{"tuned" + suffix, xs, {}};
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const SweepPoint& p = r.points[i * stride + j];
      defaults.y.push_back(efficiency ? 100 * p.default_efficiency() : p.default_step_us / 1000);
      tuned.y.push_back(efficiency ? 100 * p.tuned_efficiency() : p.tuned_step_us / 1000);
    }
    series.push_back(std::move(defaults));
    series.push_back(std::move(tuned));
  }
  return svg::line_chart(series, r.spec.axes[0].key, y_title, plain_label, xs);
}

}  // namespace

std::string sweep_text(const SweepResult& r) {
  std::ostringstream o;
  o << "# colltune sweep: " << title(r) << "\n#";
  for (const SweepAxis& a : r.spec.axes) o << " " << a.key;
  o << "  ranks  defaults(ms)  tuned(ms)  speedup  efficiency(defaults, tuned)  bottleneck     tuned configuration\n";
  for (const SweepPoint& p : r.points) {
    o << " ";
    for (std::size_t a = 0; a < p.values.size(); ++a) {
      char cell[64];
      std::snprintf(cell, sizeof cell, " %*s", static_cast<int>(r.spec.axes[a].key.size()), p.values[a].c_str());
      o << cell;
    }
    char row[200];
    std::snprintf(row, sizeof row, "  %5d  %12.3f  %9.3f  %6.2fx  %9.1f %%, %5.1f %%            %-13s  ", p.ranks,
                  p.default_step_us / 1000, p.tuned_step_us / 1000, p.default_step_us / p.tuned_step_us,
                  100 * p.default_efficiency(), 100 * p.tuned_efficiency(), p.bottleneck.resource.c_str());
    o << row << config_text(p.tuned) << "\n";
  }
  std::vector<std::string> limits;  // each distinct bottleneck once, in point order
  for (const SweepPoint& p : r.points)
    if (std::find(limits.begin(), limits.end(), p.bottleneck.description) == limits.end())
      limits.push_back(p.bottleneck.description);
  for (const std::string& l : limits) {
    std::string where;
    for (const SweepPoint& p : r.points)
      if (p.bottleneck.description == l) where += (where.empty() ? "" : ", ") + describe(r, p);
    o << "bottleneck (" << where << "): " << l << "\n";
  }
  for (const std::string& n : r.pinned) o << n << "\n";
  std::vector<std::string> sources;  // each distinct compute source once, in point order
  for (const SweepPoint& p : r.points)
    if (std::find(sources.begin(), sources.end(), p.compute) == sources.end()) sources.push_back(p.compute);
  for (const std::string& c : sources) o << "compute from: " << c << "\n";
  if (r.notes.empty()) {
    o << "tuning does not change the answer: defaults and tuned move together (within 10%) along "
      << r.spec.axes[0].key << "\n";
  } else {
    o << "tuning changes the answer:\n";
    for (const std::string& n : r.notes) o << "  " << n << "\n";
  }
  return o.str();
}

std::string sweep_csv(const SweepResult& r) {
  std::ostringstream o;
  for (const SweepAxis& a : r.spec.axes) o << a.key << ",";
  o << "topology,model,ranks,default_step_ms,tuned_step_ms,speedup,default_efficiency,tuned_efficiency,"
    << "fusion_threshold_bytes,cycle_time_ms,fp16,algorithm,chunk_bytes,hierarchical,bottleneck\n";
  for (const SweepPoint& p : r.points) {
    // A ps runtime's options hold commas ("ps:servers=4,colocated"): such a value is quoted.
    for (const std::string& v : p.values) o << (v.find(',') == std::string::npos ? v : "\"" + v + "\"") << ",";
    o << "\"" << p.topology << "\",\"" << p.model << "\"," << p.ranks << "," << fmt("%.6g", p.default_step_us / 1000)
      << "," << fmt("%.6g", p.tuned_step_us / 1000) << "," << fmt("%.6g", p.default_step_us / p.tuned_step_us) << ","
      << fmt("%.6g", p.default_efficiency()) << "," << fmt("%.6g", p.tuned_efficiency()) << ","
      << p.tuned.fusion_threshold_bytes << "," << fmt("%.6g", p.tuned.cycle_time_us / 1000) << ","
      << (p.tuned.fp16 ? 1 : 0) << "," << p.tuned.algorithm << "," << p.tuned.chunk_bytes << ","
      << (p.tuned.hierarchical ? 1 : 0) << "," << p.bottleneck.resource << "\n";
  }
  return o.str();
}

std::string sweep_json(const SweepResult& r) {
  nlohmann::ordered_json axes = nlohmann::ordered_json::array(), points = nlohmann::ordered_json::array();
  for (const SweepAxis& a : r.spec.axes) axes.push_back({{"key", a.key}, {"values", a.values}});
  for (const SweepPoint& p : r.points) {
    points.push_back({{"values", p.values},
                      {"topology", p.topology},
                      {"model", p.model},
                      {"ranks", p.ranks},
                      {"compute_source", p.compute},
                      {"compute_ms", p.compute_us / 1000},
                      {"default_step_ms", p.default_step_us / 1000},
                      {"tuned_step_ms", p.tuned_step_us / 1000},
                      {"tuned",
                       {{"fusion_threshold_bytes", p.tuned.fusion_threshold_bytes},
                        {"cycle_time_ms", p.tuned.cycle_time_us / 1000},
                        {"fp16_compression", p.tuned.fp16},
                        {"algorithm", p.tuned.algorithm},
                        {"chunk_bytes", p.tuned.chunk_bytes},
                        {"hierarchical", p.tuned.hierarchical}}},
                      {"bottleneck", bottleneck_json(p.bottleneck)}});
  }
  const nlohmann::ordered_json out = {{"format", "colltune-sweep"}, {"version", 1},
                                      {"topology", r.spec.topology}, {"model", r.spec.model},
                                      {"axes", axes},                {"points", points},
                                      {"tuning_changes_the_answer", r.notes},
                                      {"pinned", r.pinned}};
  return finite::json_text(out, 2, "the sweep JSON");
}

std::string sweep_html(const SweepResult& r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>colltune sweep: "
    << svg::escape(title(r)) << "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
    << "collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}</style>"
    << "</head><body>\n<h1>colltune sweep: " << svg::escape(title(r)) << "</h1>\n";
  std::vector<double> xs;
  if (numeric_axis(r.spec.axes[0], &xs) && xs.size() > 1) {
    o << "<h2>Step time</h2>\n" << chart(r, xs, "step time (ms)", false) << "<h2>Scaling efficiency</h2>\n"
      << "<p>Compute time over step time.</p>\n" << chart(r, xs, "scaling efficiency (%)", true);
  } else {
    o << "<h2>Step time</h2>\n" << bars(r);
  }
  o << "<h2>Where tuning changes the answer</h2>\n<ul>";
  for (const std::string& n : r.notes) o << "<li>" << svg::escape(n) << "</li>";
  if (r.notes.empty()) o << "<li>Nowhere: defaults and tuned move together (within 10%).</li>";
  o << "</ul>\n<h2>Points</h2>\n<table><tr>";
  for (const SweepAxis& a : r.spec.axes) o << "<th>" << svg::escape(a.key) << "</th>";
  o << "<th>ranks</th><th>defaults</th><th>tuned</th><th>speedup</th><th>tuned configuration</th><th>bottleneck</th>"
    << "</tr>\n";
  for (const SweepPoint& p : r.points) {
    o << "<tr>";
    for (const std::string& v : p.values) o << "<td>" << svg::escape(v) << "</td>";
    o << "<td>" << p.ranks << "</td><td>" << fmt("%.3g", p.default_step_us / 1000) << " ms</td><td>"
      << fmt("%.3g", p.tuned_step_us / 1000) << " ms</td><td>" << fmt("%.2f", p.default_step_us / p.tuned_step_us)
      << "x</td><td>" << svg::escape(config_text(p.tuned)) << "</td><td style=\"text-align:left\">"
      << svg::escape(p.bottleneck.line()) << "</td></tr>\n";
  }
  o << "</table>\n";
  if (!r.pinned.empty()) {
    o << "<h2>Points that do not move</h2>\n<ul>";
    for (const std::string& n : r.pinned) o << "<li>" << svg::escape(n) << "</li>";
    o << "</ul>\n";
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace colltune::tuner
