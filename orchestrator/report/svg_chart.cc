#include "orchestrator/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "orchestrator/report/html_escape.h"

namespace ferry::report {
namespace {

// Plot area inside the svg: room for tick labels left and below, legend on top.
constexpr int kLeft = 56, kRight = 16, kTop = 40, kBottom = 44;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

struct Scale {
  double lo = 0, hi = 1;
  double px_lo = 0, px_hi = 1;
  double operator()(double v) const {
    return hi == lo ? (px_lo + px_hi) / 2 : px_lo + (v - lo) / (hi - lo) * (px_hi - px_lo);
  }
};

std::string open_svg(const ChartFrame& f) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"" + html_escape(f.id) +
                  "\" viewBox=\"0 0 " + std::to_string(f.width) + " " + std::to_string(f.height) + "\" width=\"" +
                  std::to_string(f.width) + "\" height=\"" + std::to_string(f.height) + "\" role=\"img\">";
  s += "<title>" + html_escape(f.title) + "</title>";
  s += "<text class=\"chart-title\" x=\"" + std::to_string(kLeft) + "\" y=\"16\">" + html_escape(f.title) + "</text>";
  return s;
}

std::string legend(const ChartFrame& f, const std::vector<ChartSeries>& series) {
  std::string s;
  double x = kLeft;
  for (const auto& ser : series) {
    s += "<rect x=\"" + num(x) + "\" y=\"24\" width=\"10\" height=\"10\" fill=\"" + html_escape(ser.color) + "\"/>";
    s += "<text class=\"legend\" x=\"" + num(x + 14) + "\" y=\"33\">" + html_escape(ser.name) + "</text>";
    x += 24 + 7.0 * static_cast<double>(ser.name.size());
  }
  (void)f;
  return s;
}

std::string y_axis(const ChartFrame& f, const Scale& y, const std::vector<double>& ticks) {
  std::string s;
  for (double t : ticks) {
    double py = y(t);
    s += "<line class=\"grid\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" + std::to_string(f.width - kRight) +
         "\" y1=\"" + num(py) + "\" y2=\"" + num(py) + "\"/>";
    s += "<text class=\"tick\" text-anchor=\"end\" x=\"" + std::to_string(kLeft - 6) + "\" y=\"" + num(py + 4) + "\">" +
         format_number(t, "%g") + "</text>";
  }
  s += "<text class=\"axis-label\" transform=\"translate(14 " + num((kTop + f.height - kBottom) / 2.0) +
       ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(f.y_label) + "</text>";
  s += "<text class=\"axis-label\" text-anchor=\"middle\" x=\"" + num((kLeft + f.width - kRight) / 2.0) + "\" y=\"" +
       std::to_string(f.height - 6) + "\">" + html_escape(f.x_label) + "</text>";
  return s;
}

std::string no_data(const ChartFrame& f) {
  return "<text class=\"no-data\" text-anchor=\"middle\" x=\"" + num(f.width / 2.0) + "\" y=\"" + num(f.height / 2.0) +
         "\">no data</text>";
}

}  // namespace

std::string format_number(double v, const char* fmt) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  if (std::fabs(v) >= 1000 && std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    std::string s = buf, out;  // thousands separated by commas
    size_t digits_start = s[0] == '-' ? 1 : 0;
    for (size_t i = 0; i < s.size(); ++i) {
      out += s[i];
      size_t left = s.size() - i - 1;
      if (i >= digits_start && left > 0 && left % 3 == 0) out += ',';
    }
    return out;
  }
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) return {lo};
  double raw = (hi - lo) / std::max(1, count);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  for (double k = first; k <= last; ++k) ticks.push_back(k == 0 ? 0.0 : k * step);
  return ticks;
}

std::string svg_line_chart(const ChartFrame& f, const std::vector<ChartSeries>& series) {
  std::string s = open_svg(f);
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const auto& ser : series) {
    for (auto [x, y] : ser.points) {
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  if (!std::isfinite(x_lo)) return s + no_data(f) + "</svg>";
  if (f.y_from_zero) y_lo = std::min(0.0, y_lo);
  if (y_hi == y_lo) y_hi = y_lo + 1;
  std::vector<double> yt = nice_ticks(y_lo, y_hi, 5);
  y_lo = std::min(y_lo, yt.front()), y_hi = std::max(y_hi, yt.back());
  Scale x{x_lo, x_hi, static_cast<double>(kLeft + 12), static_cast<double>(f.width - kRight - 12)};
  Scale y{y_lo, y_hi, static_cast<double>(f.height - kBottom), static_cast<double>(kTop)};
  s += y_axis(f, y, yt);
  // x ticks: at the data's own x values when few (checkpoint steps), else round ones.
  std::vector<double> xs;
  for (const auto& ser : series) {
    for (auto p : ser.points) xs.push_back(p.first);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (xs.size() > 10) xs = nice_ticks(x_lo, x_hi, 6);
  for (double t : xs) {
    if (t < x_lo - 1e-9 || t > x_hi + 1e-9) continue;
    s += "<text class=\"tick\" text-anchor=\"middle\" x=\"" + num(x(t)) + "\" y=\"" +
         std::to_string(f.height - kBottom + 16) + "\">" + format_number(t, "%g") + "</text>";
  }
  s += legend(f, series);
  for (const auto& ser : series) {
    auto pts = ser.points;
    std::stable_sort(pts.begin(), pts.end(), [](auto a, auto b) { return a.first < b.first; });
    std::string path;
    for (auto [px, py] : pts) path += (path.empty() ? "M" : " L") + num(x(px)) + " " + num(y(py));
    if (pts.size() > 1) {
      s += "<path class=\"line\" fill=\"none\" stroke-width=\"2\" stroke=\"" + html_escape(ser.color) + "\" d=\"" +
           path + "\"/>";
    }
    for (auto [px, py] : pts) {
      s += "<circle class=\"pt\" data-series=\"" + html_escape(ser.name) + "\" cx=\"" + num(x(px)) + "\" cy=\"" +
           num(y(py)) + "\" r=\"4\" fill=\"" + html_escape(ser.color) + "\"><title>" + html_escape(ser.name) + " @ " +
           html_escape(f.x_label) + " " + format_number(px, "%g") + ": " + format_number(py, f.y_format.c_str()) +
           "</title></circle>";
    }
  }
  return s + "</svg>";
}

std::string svg_bar_chart(const ChartFrame& f, const std::vector<std::string>& categories,
                          const std::vector<ChartSeries>& series) {
  std::string s = open_svg(f);
  double y_hi = 0;
  for (const auto& ser : series) {
    for (auto p : ser.points) y_hi = std::max(y_hi, p.second);
  }
  if (categories.empty() || series.empty()) return s + no_data(f) + "</svg>";
  if (y_hi <= 0) y_hi = 1;
  std::vector<double> yt = nice_ticks(0, y_hi, 5);
  y_hi = std::max(y_hi, yt.back());
  Scale y{0, y_hi, static_cast<double>(f.height - kBottom), static_cast<double>(kTop)};
  s += y_axis(f, y, yt);
  s += legend(f, series);
  double group = static_cast<double>(f.width - kLeft - kRight) / static_cast<double>(categories.size());
  double bar = group * 0.8 / static_cast<double>(series.size());
  for (size_t c = 0; c < categories.size(); ++c) {
    double gx = kLeft + group * static_cast<double>(c);
    s += "<text class=\"tick\" text-anchor=\"middle\" x=\"" + num(gx + group / 2) + "\" y=\"" +
         std::to_string(f.height - kBottom + 16) + "\">" + html_escape(categories[c]) + "</text>";
    for (size_t k = 0; k < series.size(); ++k) {
      if (c >= series[k].points.size()) continue;
      double v = series[k].points[c].second;
      double top = y(v), bottom = y(0);
      s += "<rect class=\"bar\" data-series=\"" + html_escape(series[k].name) + "\" x=\"" +
           num(gx + group * 0.1 + bar * static_cast<double>(k)) + "\" y=\"" + num(top) + "\" width=\"" +
           num(std::max(1.0, bar - 2)) + "\" height=\"" + num(bottom - top) + "\" fill=\"" +
           html_escape(series[k].color) + "\"><title>" + html_escape(series[k].name) + " @ " +
           html_escape(categories[c]) + ": " + format_number(v, f.y_format.c_str()) + "</title></rect>";
    }
  }
  return s + "</svg>";
}

}  // namespace ferry::report
