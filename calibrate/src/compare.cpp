// colltune compare (compare.hpp): measured beside predicted, as text, JSON and an HTML page.
#include "colltune/calibrate/compare.hpp"

#include "row_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "colltune/common/finite.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#include "colltune/common/svg.hpp"

namespace colltune::tuner {
namespace {

using ojson = nlohmann::ordered_json;

std::string pct(double x, bool sign) {
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", 100 * x);
  return buf;
}

ojson summary_json(const ErrorSummary& s) {
  return {{"rows", s.rows}, {"median_abs_error", s.median_abs}, {"max_abs_error", s.max_abs}};
}

std::string bytes_label(double x) { return format_bytes(static_cast<std::size_t>(x)); }

// " (N spikes left out)" where there are any.
std::string spikes_left_out(std::size_t spikes) {
  if (spikes == 0) return "";
  return " (" + std::to_string(spikes) + (spikes == 1 ? " spike" : " spikes") + " left out)";
}

// "SEP median |error| M, max X", or nothing where every row was a spike.
std::string errors_of(const ErrorSummary& s, const char* sep) {
  if (s.rows == 0) return "";
  return sep + std::string("median |error| ") + pct(s.median_abs, false) + ", max " + pct(s.max_abs, false);
}

// Rows of one model in size order.
std::vector<const RowFit*> rows_of(const Comparison& c, const std::string& model) {
  std::vector<const RowFit*> out;
  for (const RowFit& r : c.rows)
    if (r.model == model) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const RowFit* a, const RowFit* b) { return a->bytes < b->bytes; });
  return out;
}

}  // namespace

Comparison compare_measurements(const topo::Topology& topology, const MeasurementSet& measurements) {
  Comparison c;
  c.topology = topology.name;
  c.nranks = topology.num_ranks();
  c.skipped = measurements.skipped;
  c.unread_nccl_env = measurements.unread_nccl_env;
  check_rank_count(topology, measurements);
  const Predictor predictor(topology, topology.num_ranks());
  std::map<std::string, std::vector<double>> errors;
  std::vector<double> all;
  for (const Measurement& m : measurements.rows) {
    std::string why;
    const auto model = predictor.model_of(m, &why);
    if (!model) {
      c.not_modelled.push_back(m.source + ": " + why);
      continue;
    }
    if (const auto nccl = predictor.nccl_model_only(m)) c.nccl_model.push_back(m.source + ": " + *nccl);
    RowFit r;
    r.nccl = predictor.nccl_pick(m);
    r.source = m.source;
    r.model = *model;
    r.bytes = m.bytes;
    r.measured_us = m.time_us;
    r.predicted_us = predictor.time_us(m);  // as simulate prices it: the machine's own figures
    r.rel_error = r.predicted_us / r.measured_us - 1;
    if (is_spike(m)) {  // shown, but it measures a disturbance, as calibrate judges it
      r.flag = "spike";
      ++c.spikes;
    } else {
      errors[r.model].push_back(std::abs(r.rel_error));
      all.push_back(std::abs(r.rel_error));
    }
    c.rows.push_back(std::move(r));
  }
  if (c.rows.empty())
    throw Error("compare: no measured row has a colltune model (" + c.not_modelled.front() + ")");
  for (const RowFit& r : c.rows) errors.try_emplace(r.model);  // a model whose rows are all spikes: 0 rows
  for (const auto& [model, e] : errors) c.by_model[model] = summarize_errors(e);
  c.overall = summarize_errors(all);
  return c;
}

std::string comparison_text(const Comparison& c) {
  std::ostringstream o;
  o << "measured and predicted on " << c.topology << " (" << c.nranks << " ranks)\n";
  for (const auto& [model, summary] : c.by_model) {
    o << "\n" << model << "\n";
    char line[160];
    std::snprintf(line, sizeof line, "%12s %14s %14s %9s\n", "size", "measured_us", "predicted_us", "error");
    o << line;
    std::size_t spikes = 0;
    for (const RowFit* r : rows_of(c, model)) {
      std::snprintf(line, sizeof line, "%12zu %14.2f %14.2f %9s%s\n", r->bytes, r->measured_us, r->predicted_us,
                    pct(r->rel_error, true).c_str(), r->flag == "spike" ? "  spike" : "");
      o << line;
      spikes += r->flag == "spike" ? 1 : 0;
    }
    o << "  " << summary.rows << " rows" << spikes_left_out(spikes) << errors_of(summary, ": ") << "\n";
  }
  o << "\noverall: " << c.overall.rows << " rows" << spikes_left_out(c.spikes) << errors_of(c.overall, ", ") << "\n";
  if (c.spikes > 0)
    o << "spike: a row whose out-of-place and in-place times are 1.5x apart (one sample disturbed), left out of "
         "the errors as calibrate leaves it out of the fit\n";
  if (!c.not_modelled.empty()) {
    o << "not modelled (" << c.not_modelled.size() << "): " << c.not_modelled.front();
    if (c.not_modelled.size() > 1) o << " (and " << c.not_modelled.size() - 1 << " more; --json lists all)";
    o << "\n";
  }
  if (!c.nccl_model.empty()) {
    o << "predicted by NCCL's own model, no colltune schedule (" << c.nccl_model.size() << "): " << c.nccl_model.front();
    if (c.nccl_model.size() > 1) o << " (and " << c.nccl_model.size() - 1 << " more; --json lists all)";
    o << "\n";
  }
  if (!c.skipped.empty()) o << "skipped lines: " << c.skipped.size() << " (--json lists them)\n";
  for (const std::string& e : c.unread_nccl_env)
    o << "NCCL settings colltune's NCCL model does not read (it reads NCCL_ALGO, NCCL_PROTO and the channel "
         "counts): "
      << e << "\n";
  return o.str();
}

std::string comparison_json(const Comparison& c) {
  ojson rows = ojson::array();
  for (const RowFit& r : c.rows) {
    rows.push_back(row_json(r));
    if (!r.flag.empty()) rows.back()["flag"] = r.flag;
  }
  ojson models = ojson::object();
  for (const auto& [model, s] : c.by_model) models[model] = summary_json(s);
  const ojson j{{"format", "colltune-compare"},
                {"version", 1},
                {"topology", c.topology},
                {"nranks", c.nranks},
                {"overall", summary_json(c.overall)},
                {"spikes", c.spikes},
                {"by_model", models},
                {"rows", rows},
                {"not_modelled", c.not_modelled},
                {"nccl_model", c.nccl_model},
                {"skipped", c.skipped},
                {"unread_nccl_env", c.unread_nccl_env}};
  return finite::json_text(j, 2, "compare --json") + "\n";
}

std::string comparison_html(const Comparison& c) {
  std::ostringstream o;
  const std::string title = "colltune compare: " + c.topology + " (" + std::to_string(c.nranks) + " ranks)";
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << svg::escape(title)
    << "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}</style>\n</head><body>\n<h1>"
    << svg::escape(title) << "</h1>\n<p>Overall: " << c.overall.rows << " rows, median |predicted/measured - 1| "
    << pct(c.overall.median_abs, false) << ", max " << pct(c.overall.max_abs, false)
    << ". Bandwidth is size / time (nccl-tests' algbw).</p>\n";
  for (const auto& [model, summary] : c.by_model) {
    const auto rows = rows_of(c, model);
    svg::Series measured{"measured", {}, {}}, predicted{"predicted", {}, {}};
    for (const RowFit* r : rows) {
      const double x = static_cast<double>(std::max<std::size_t>(r->bytes, 1));
      measured.x.push_back(x);
      measured.y.push_back(static_cast<double>(r->bytes) / r->measured_us / 1e3);
      predicted.x.push_back(x);
      predicted.y.push_back(static_cast<double>(r->bytes) / r->predicted_us / 1e3);
    }
    o << "<h2>" << svg::escape(model) << "</h2>\n<p>" << summary.rows << " rows, median |error| "
      << pct(summary.median_abs, false) << ", max " << pct(summary.max_abs, false) << "</p>\n"
      << svg::line_chart({measured, predicted}, "size", "GB/s", bytes_label)
      << "\n<table><tr><th>size</th><th>measured us</th><th>predicted us</th><th>error</th><th>source</th></tr>\n";
    for (const RowFit* r : rows) {
      char cells[160];
      std::snprintf(cells, sizeof cells, "<td>%zu</td><td>%.2f</td><td>%.2f</td><td>%s%s</td>", r->bytes,
                    r->measured_us, r->predicted_us, pct(r->rel_error, true).c_str(),
                    r->flag == "spike" ? " (spike)" : "");
      o << "<tr>" << cells << "<td style=\"text-align:left\">" << svg::escape(r->source) << "</td></tr>\n";
    }
    o << "</table>\n";
  }
  if (!c.not_modelled.empty()) {
    o << "<h2>Not modelled</h2>\n<ul>";
    for (const auto& n : c.not_modelled) o << "<li>" << svg::escape(n) << "</li>";
    o << "</ul>\n";
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace colltune::tuner
