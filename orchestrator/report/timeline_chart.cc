#include "orchestrator/report/timeline_chart.h"

#include <algorithm>
#include <cstdio>

#include "orchestrator/report/html_escape.h"
#include "orchestrator/report/svg_chart.h"

namespace ferry::report {
namespace {

constexpr int kWidth = 960, kLabelWidth = 170, kRowHeight = 24, kTop = 28, kBottom = 28, kRight = 16;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

const char* state_fill(const std::string& state) {
  if (state == "succeeded") return "#3a9d5d";
  if (state == "running") return "#3b7dd8";
  if (state == "failed" || state == "timed_out") return "#d64545";
  if (state == "cancelled") return "#8a8a8a";
  return "#c9a227";  // an attempt that ended otherwise (lost, retried)
}

int64_t ms_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

// The run's time from its first start to its last end (or now, for what still
// runs) mapped onto the chart's width, right of the row labels.
struct TimeAxis {
  int64_t t0 = 0, t1 = 0;

  TimeAxis(const nlohmann::json& run, int64_t now) : t0(ms_of(run, "created_ms")), t1(ms_of(run, "ended_ms")) {
    for (const auto& s : run["stages"]) {
      for (const auto& a : s.value("attempts", nlohmann::json::array())) {
        int64_t start = ms_of(a, "started_ms"), end = ms_of(a, "ended_ms");
        if (start > 0 && (t0 == 0 || start < t0)) t0 = start;
        t1 = std::max(t1, end > 0 ? end : (start > 0 ? now : 0));
      }
    }
    if (t1 <= t0) t1 = t0 + 1000;
  }

  double span_s() const { return static_cast<double>(t1 - t0) / 1000.0; }

  double x(int64_t ms) const {
    return kLabelWidth + static_cast<double>(ms - t0) / static_cast<double>(t1 - t0) * (kWidth - kLabelWidth - kRight);
  }
};

// A grid line and its seconds label at each round tick.
std::string grid_ticks(const TimeAxis& axis, int height) {
  std::string s;
  const double span_s = axis.span_s();
  for (double t : nice_ticks(0, span_s, 8)) {
    if (t > span_s) break;
    double px = axis.x(axis.t0 + static_cast<int64_t>(t * 1000));
    s += "<line class=\"grid\" x1=\"" + num(px) + "\" x2=\"" + num(px) + "\" y1=\"" + std::to_string(kTop - 6) +
         "\" y2=\"" + std::to_string(height - kBottom) + "\"/>";
    s += "<text class=\"tick\" text-anchor=\"middle\" x=\"" + num(px) + "\" y=\"" +
         std::to_string(height - kBottom + 16) + "\">" + format_number(t, "%g") + " s</text>";
  }
  return s;
}

// One bar per attempt of the stage, coloured by its state; an attempt still
// running ends now.
std::string attempt_bars(const TimeAxis& axis, const nlohmann::json& st, double y, int64_t now) {
  std::string s;
  const std::string name = st.value("name", std::string());
  const auto attempts = st.value("attempts", nlohmann::json::array());
  for (const auto& a : attempts) {
    int64_t start = ms_of(a, "started_ms"), end = ms_of(a, "ended_ms");
    if (start <= 0) continue;
    if (end <= 0) end = now;
    const std::string state = a.value("state", std::string());
    double bx = axis.x(start), bw = std::max(2.0, axis.x(end) - bx);
    std::string tip = name + " attempt " + std::to_string(a.value("attempt", 0)) + ": " + state + ", " +
                      format_number(static_cast<double>(end - start) / 1000.0, "%.1f") + " s";
    const std::string err = a.value("error", std::string());
    if (!err.empty()) tip += " — " + err;
    s += "<rect class=\"attempt\" data-stage=\"" + html_escape(name) + "\" data-attempt=\"" +
         std::to_string(a.value("attempt", 0)) + "\" data-state=\"" + html_escape(state) + "\" x=\"" + num(bx) +
         "\" y=\"" + num(y + 4) + "\" width=\"" + num(bw) + "\" height=\"" + std::to_string(kRowHeight - 8) +
         "\" rx=\"3\" fill=\"" + state_fill(state) + "\"><title>" + html_escape(tip) + "</title></rect>";
    if (attempts.size() > 1 && bw > 14) {
      s += "<text class=\"bar-label\" x=\"" + num(bx + 3) + "\" y=\"" + num(y + 16) + "\">" +
           std::to_string(a.value("attempt", 0)) + "</text>";
    }
  }
  return s;
}

// A watching eval: a tick where each checkpoint's report came in.
std::string evaluated_ticks(const TimeAxis& axis, const nlohmann::json& st, double y) {
  std::string s;
  const auto evaluated = st.value("evaluated", nlohmann::json::array());
  if (evaluated.size() <= 1) return s;
  for (const auto& ev : evaluated) {
    double px = axis.x(ms_of(ev, "ts_ms"));
    s += "<line class=\"evaluated\" x1=\"" + num(px) + "\" x2=\"" + num(px) + "\" y1=\"" + num(y + 2) + "\" y2=\"" +
         num(y + kRowHeight - 2) + "\" stroke=\"#1d3f6e\" stroke-width=\"2\"><title>" +
         html_escape(ev.value("checkpoint", std::string()) + " evaluated") + "</title></line>";
  }
  return s;
}

// A hatched span while the stage's host link was down; one never reconnected
// lasts to the stage's end, or now.
std::string drop_spans(const TimeAxis& axis, const nlohmann::json& st, double y, int64_t now) {
  std::string s;
  const std::string name = st.value("name", std::string());
  for (const auto& d : st.value("drops", nlohmann::json::array())) {
    int64_t from = ms_of(d, "ts_ms"), to = ms_of(d, "reconnected_ms");
    if (to <= 0) to = std::max(from + 1, ms_of(st, "ended_ms") > 0 ? ms_of(st, "ended_ms") : now);
    double dx = axis.x(from), dw = std::max(3.0, axis.x(to) - dx);
    std::string tip = "host " + d.value("host", std::string()) + " dropped for " +
                      format_number(static_cast<double>(to - from) / 1000.0, "%.1f") +
                      " s: " + d.value("why", std::string());
    s += "<rect class=\"drop\" data-stage=\"" + html_escape(name) + "\" x=\"" + num(dx) + "\" y=\"" + num(y + 1) +
         "\" width=\"" + num(dw) + "\" height=\"" + std::to_string(kRowHeight - 2) +
         "\" fill=\"url(#drop-hatch)\" stroke=\"#d64545\"><title>" + html_escape(tip) + "</title></rect>";
  }
  return s;
}

// A stage's row label: its name, and how many attempts it took when more than one.
std::string row_label(const nlohmann::json& st, double y) {
  std::string label = st.value("name", std::string());
  const size_t attempts = st.value("attempts", nlohmann::json::array()).size();
  if (attempts > 1) label += " (" + std::to_string(attempts) + " attempts)";
  return "<text class=\"row-label\" x=\"4\" y=\"" + num(y + 16) + "\">" + html_escape(label) + "</text>";
}

}  // namespace

std::string svg_timeline(const std::string& id, const nlohmann::json& run, int64_t now) {
  const auto& stages = run["stages"];
  const TimeAxis axis(run, now);
  const int height = kTop + kRowHeight * static_cast<int>(stages.size()) + kBottom;
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"" + html_escape(id) +
                  "\" viewBox=\"0 0 " + std::to_string(kWidth) + " " + std::to_string(height) + "\" width=\"" +
                  std::to_string(kWidth) + "\" height=\"" + std::to_string(height) + "\" role=\"img\">";
  s += "<title>stage timeline</title>";
  s += grid_ticks(axis, height);
  int row = 0;
  for (const auto& st : stages) {
    const double y = kTop + kRowHeight * row++;
    s += row_label(st, y);
    s += attempt_bars(axis, st, y, now);
    s += evaluated_ticks(axis, st, y);
    s += drop_spans(axis, st, y, now);
  }
  s += "<defs><pattern id=\"drop-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"#d64545\" "
       "opacity=\"0.55\"/></pattern></defs>";
  return s + "</svg>";
}

}  // namespace ferry::report
