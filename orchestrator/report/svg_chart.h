// Charts as inline SVG for the HTML report: a line chart (τ per checkpoint step,
// acceptance by block position) and a grouped bar chart (the acceptance-length
// histogram). Generated here so the page needs no script and no network. Every
// data point is one element with class "pt" (line) or "bar" (bars) and a
// data-series attribute, so a test can count what was drawn. Any thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ferry::report {

struct ChartSeries {
  std::string name;   // legend text; also the data-series attribute
  std::string color;  // CSS colour
  std::vector<std::pair<double, double>> points;  // (x, y); bars use y only, one per category
};

struct ChartFrame {
  std::string id;  // the svg element's id
  std::string title;
  std::string x_label, y_label;
  int width = 560, height = 260;
  bool y_from_zero = true;
  std::string y_format = "%.2f";  // printf format of a point's value in its tooltip
};

/// Lines through each series' points (sorted by x), a marker per point with its value
/// as a tooltip. Axes span every series; an empty chart says "no data".
std::string svg_line_chart(const ChartFrame& frame, const std::vector<ChartSeries>& series);

/// One group per category, one bar per series in each group.
std::string svg_bar_chart(const ChartFrame& frame, const std::vector<std::string>& categories,
                          const std::vector<ChartSeries>& series);

/// Round tick values from at or below lo to at or above hi (about `count` of them, steps of 1, 2 or 5 × 10^k).
std::vector<double> nice_ticks(double lo, double hi, int count);

/// A number as short text: "2.64", "1,500", "0.0012".
std::string format_number(double v, const char* fmt);

}  // namespace ferry::report
