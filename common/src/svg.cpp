// Inline SVG charts for the HTML report (no scripts, no external resources).
#include "colltune/common/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace colltune::svg {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kPaletteSize = 10;

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string colour(int i) { return kPalette[((i % kPaletteSize) + kPaletteSize) % kPaletteSize]; }

// Green (fast) to red (slow) through yellow, for t in [0,1].
std::string heat_colour(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const int r = static_cast<int>(std::lround(t < 0.5 ? 510 * t : 255));
  const int g = static_cast<int>(std::lround(t < 0.5 ? 200 : 200 - 400 * (t - 0.5)));
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x50", std::clamp(r, 0, 255), std::clamp(g, 0, 255));
  return buf;
}

// A "nice" axis maximum: 1, 2 or 5 times a power of ten at or above v.
double nice_max(double v) {
  if (!(v > 0)) return 1.0;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

// An SVG that scales to the page's width, keeping its proportions.
std::string open_svg(double w, double h, int font_size) {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << w << " " << h << "\" width=\"100%\" "
    << "style=\"max-width:" << w * 1.6 << "px\" font-size=\"" << font_size << "\">\n";
  return o.str();
}

// The colour scale under a heatmap: lo (green) to hi (red), log scale, with its unit.
std::string heat_legend(double x, double y, double width, double lo, double hi, const std::string& unit) {
  std::ostringstream o;
  constexpr int kSteps = 20;
  for (int k = 0; k < kSteps; ++k)
    o << "<rect x=\"" << fmt(x + width * k / kSteps) << "\" y=\"" << fmt(y) << "\" width=\"" << fmt(width / kSteps + 0.5)
      << "\" height=\"10\" fill=\"" << heat_colour((k + 0.5) / kSteps) << "\"/>\n";
  char lo_text[32], hi_text[32];
  std::snprintf(lo_text, sizeof lo_text, "%.3g", lo);
  std::snprintf(hi_text, sizeof hi_text, "%.3g", hi);
  o << "<text x=\"" << fmt(x) << "\" y=\"" << fmt(y + 22) << "\">" << lo_text << " " << escape(unit) << " (fast)</text>"
    << "<text x=\"" << fmt(x + width) << "\" y=\"" << fmt(y + 22) << "\" text-anchor=\"end\">" << hi_text << " "
    << escape(unit) << " (slow, log scale)</text>\n";
  return o.str();
}

}  // namespace

double tick_step(double span, int ticks) {
  if (!(span > 0) || ticks < 1) return 1.0;
  const double raw = span / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string line_chart(const std::vector<Series>& series, std::string_view x_title, std::string_view y_title,
                       std::string (*x_label_of)(double), const std::vector<double>& ticks) {
  const double w = 720, h = 360, left = 60, right = 170, top = 20, bottom = 50;
  double x_lo = 0, x_hi = 0, y_hi = 0;
  bool any = false;
  for (const auto& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      x_lo = any ? std::min(x_lo, s.x[i]) : s.x[i];
      x_hi = any ? std::max(x_hi, s.x[i]) : s.x[i];
      y_hi = std::max(y_hi, s.y[i]);
      any = true;
    }
  if (!any || x_lo <= 0 || x_hi <= x_lo) return "<p>(no data)</p>";
  y_hi = nice_max(y_hi);
  auto px = [&](double x) { return left + (w - left - right) * std::log2(x / x_lo) / std::log2(x_hi / x_lo); };
  auto py = [&](double y) { return top + (h - top - bottom) * (1.0 - y / y_hi); };
  std::ostringstream o;
  o << open_svg(w, h, 11);
  for (int k = 0; k <= 5; ++k) {  // y grid
    const double y = y_hi * k / 5.0;
    o << "<line x1=\"" << left << "\" x2=\"" << w - right << "\" y1=\"" << fmt(py(y)) << "\" y2=\"" << fmt(py(y))
      << "\" stroke=\"#ddd\"/><text x=\"" << left - 5 << "\" y=\"" << fmt(py(y) + 4) << "\" text-anchor=\"end\">"
      << fmt(y) << "</text>\n";
  }
  std::vector<double> x_ticks = ticks;
  if (x_ticks.empty())
    for (double x = x_lo; x <= x_hi * 1.0001; x *= 16) x_ticks.push_back(x);  // every 16x
  for (double x : x_ticks)
    o << "<text x=\"" << fmt(px(x)) << "\" y=\"" << h - bottom + 15 << "\" text-anchor=\"middle\">"
      << escape(x_label_of(x)) << "</text>\n";
  o << "<text x=\"" << (left + w - right) / 2 << "\" y=\"" << h - 10 << "\" text-anchor=\"middle\">" << escape(x_title)
    << "</text><text x=\"12\" y=\"" << h / 2 << "\" transform=\"rotate(-90 12 " << h / 2
    << ")\" text-anchor=\"middle\">" << escape(y_title) << "</text>\n";
  for (std::size_t s = 0; s < series.size(); ++s) {
    std::string points;
    for (std::size_t i = 0; i < series[s].x.size(); ++i)
      if (series[s].y[i] > 0) points += fmt(px(series[s].x[i])) + "," + fmt(py(series[s].y[i])) + " ";
    const int c = static_cast<int>(s);
    o << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << colour(c) << "\" points=\"" << points
      << "\"/>\n<text x=\"" << w - right + 10 << "\" y=\"" << top + 14 * (c + 1) << "\" fill=\"" << colour(c) << "\">"
      << escape(series[s].label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string heatmap(const HeatmapSpec& spec) {
  const double cell_w = 58, cell_h = 22, left = 100, top = 40;
  const double grid_w = cell_w * static_cast<double>(spec.column_labels.size());
  const double grid_h = cell_h * static_cast<double>(spec.row_labels.size());
  const double w = left + grid_w + 10;
  const double h = top + grid_h + 70;
  std::ostringstream o;
  o << open_svg(w, h, 10) << "<text x=\"" << left << "\" y=\"14\" font-size=\"12\" font-weight=\"bold\">"
    << escape(spec.title) << "</text>\n"
    << "<text x=\"" << fmt(left + grid_w / 2) << "\" y=\"" << fmt(top + grid_h + 18)
    << "\" text-anchor=\"middle\" font-size=\"11\">" << escape(spec.x_title) << "</text>\n"
    << "<text x=\"12\" y=\"" << fmt(top + grid_h / 2) << "\" transform=\"rotate(-90 12 " << fmt(top + grid_h / 2)
    << ")\" text-anchor=\"middle\" font-size=\"11\">" << escape(spec.y_title) << "</text>\n"
    << heat_legend(left, top + grid_h + 32, std::min(grid_w, 400.0), spec.lo, spec.hi, spec.unit);
  for (std::size_t j = 0; j < spec.column_labels.size(); ++j)
    o << "<text x=\"" << fmt(left + cell_w * (static_cast<double>(j) + 0.5)) << "\" y=\"" << top - 6
      << "\" text-anchor=\"middle\">" << escape(spec.column_labels[j]) << "</text>\n";
  for (std::size_t i = 0; i < spec.row_labels.size(); ++i) {
    const double y = top + cell_h * static_cast<double>(i);
    o << "<text x=\"" << left - 5 << "\" y=\"" << fmt(y + 15) << "\" text-anchor=\"end\">"
      << escape(spec.row_labels[i]) << "</text>\n";
    for (std::size_t j = 0; j < spec.column_labels.size(); ++j) {
      const double v = spec.values[i][j];
      const double x = left + cell_w * static_cast<double>(j);
      const bool ok = std::isfinite(v);
      // Log colour scale: step times span orders of magnitude, the interesting ones are near lo.
      const double t = spec.hi > spec.lo && spec.lo > 0 ? std::log(v / spec.lo) / std::log(spec.hi / spec.lo) : 0.0;
      o << "<rect x=\"" << fmt(x) << "\" y=\"" << fmt(y) << "\" width=\"" << cell_w - 1 << "\" height=\""
        << cell_h - 1 << "\" fill=\"" << (ok ? heat_colour(t) : std::string("#eee")) << "\"><title>"
        << escape(spec.row_labels[i] + ", " + spec.column_labels[j]) << ": " << (ok ? fmt(v) : "n/a")
        << "</title></rect><text x=\"" << fmt(x + cell_w / 2) << "\" y=\"" << fmt(y + 15)
        << "\" text-anchor=\"middle\">" << (ok ? fmt(v) : "n/a") << "</text>\n";
    }
  }
  o << "</svg>\n";
  return o.str();
}

std::string timeline(const std::vector<Bar>& bars, double t_end, std::string_view unit,
                     const std::vector<LegendEntry>& legend) {
  std::vector<std::string> lanes;
  for (const auto& b : bars)
    if (std::find(lanes.begin(), lanes.end(), b.lane) == lanes.end()) lanes.push_back(b.lane);
  const double w = 900, left = 110, right = 20, lane_h = 26, top = 10;
  const double h = top + lane_h * static_cast<double>(lanes.size()) + 62;
  if (!(t_end > 0)) t_end = 1;
  auto px = [&](double t) { return left + (w - left - right) * t / t_end; };
  std::ostringstream o;
  o << open_svg(w, h, 11);
  for (std::size_t l = 0; l < lanes.size(); ++l)
    o << "<text x=\"" << left - 6 << "\" y=\"" << fmt(top + lane_h * static_cast<double>(l) + 17)
      << "\" text-anchor=\"end\">" << escape(lanes[l]) << "</text>\n";
  for (const auto& b : bars) {
    const auto lane = static_cast<double>(std::find(lanes.begin(), lanes.end(), b.lane) - lanes.begin());
    o << "<rect x=\"" << fmt(px(b.start)) << "\" y=\"" << fmt(top + lane_h * lane + 3) << "\" width=\""
      << fmt(std::max(px(b.end) - px(b.start), 1.0)) << "\" height=\"" << lane_h - 6 << "\" fill=\"" << colour(b.colour)
      << "\" fill-opacity=\"0.8\" stroke=\"#333\" stroke-width=\"0.3\"><title>" << escape(b.label)
      << "</title></rect>\n";
  }
  const double axis_y = top + lane_h * static_cast<double>(lanes.size()) + 14;
  const double step = tick_step(t_end, 10);
  for (int k = 0; k * step <= t_end * (1 + 1e-9); ++k) {
    char label[32];
    std::snprintf(label, sizeof label, "%g", k * step);
    o << "<text x=\"" << fmt(px(k * step)) << "\" y=\"" << fmt(axis_y) << "\" text-anchor=\"middle\">" << label
      << "</text>\n";
  }
  o << "<text x=\"" << fmt((left + w - right) / 2) << "\" y=\"" << fmt(axis_y + 18) << "\" text-anchor=\"middle\">time ("
    << escape(unit) << ")</text>\n";
  double x = left;
  for (const auto& e : legend) {
    o << "<rect x=\"" << fmt(x) << "\" y=\"" << fmt(axis_y + 30) << "\" width=\"12\" height=\"10\" fill=\""
      << colour(e.colour) << "\" fill-opacity=\"0.8\"/><text x=\"" << fmt(x + 16) << "\" y=\"" << fmt(axis_y + 39)
      << "\">" << escape(e.label) << "</text>\n";
    x += 30 + 6.5 * static_cast<double>(e.label.size());
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace colltune::svg
