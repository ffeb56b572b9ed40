#pragma once
// Minimal inline-SVG chart helpers for the HTML reports (tune, sweep, compare): a line chart
// with a log2 x axis, a colour-scaled heatmap, and a horizontal timeline.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace colltune::svg {

std::string escape(std::string_view text);  // & < > " for HTML/SVG text

struct Series {
  std::string label;
  std::vector<double> x;  // > 0, plotted on a log2 axis
  std::vector<double> y;  // plotted linearly from 0; points with y <= 0 are skipped
};
// `x_label_of` turns an x value into a tick label; ticks every 16x from the smallest x, or at
// `ticks` where given.
std::string line_chart(const std::vector<Series>& series, std::string_view x_title, std::string_view y_title,
                       std::string (*x_label_of)(double), const std::vector<double>& ticks = {});

struct HeatmapSpec {
  std::vector<std::string> row_labels;     // y axis, top to bottom
  std::vector<std::string> column_labels;  // x axis
  std::vector<std::vector<double>> values; // [row][column]; non-finite = not applicable
  double lo = 0, hi = 1;                   // colour scale range (shared between maps), log scale
  std::string title;
  std::string x_title, y_title;            // axis titles
  std::string unit;                        // of the values, for the colour legend
};
std::string heatmap(const HeatmapSpec& spec);

struct Bar {
  std::string lane;   // row label
  double start = 0, end = 0;
  std::string label;  // tooltip
  int colour = 0;     // palette index
};
struct LegendEntry {
  int colour = 0;  // palette index
  std::string label;
};
// Ticks at an even step (1, 2 or 5 times a power of ten) from 0 to t_end.
std::string timeline(const std::vector<Bar>& bars, double t_end, std::string_view unit,
                     const std::vector<LegendEntry>& legend);

// The even tick step for an axis from 0 to `span` with about `ticks` ticks: 1, 2 or 5 x 10^k.
double tick_step(double span, int ticks);

}  // namespace colltune::svg
