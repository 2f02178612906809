#include "orchestrator/report/html_report.h"

#include <optional>

#include "base/byte_size.h"
#include "base/peer_json.h"
#include "jobs/eval/run/eval_report_json.h"
#include "orchestrator/report/dataset_table.h"
#include "orchestrator/report/html_escape.h"
#include "orchestrator/report/inputs_table.h"
#include "orchestrator/report/svg_chart.h"
#include "orchestrator/report/timeline_chart.h"
#include "orchestrator/status_view.h"

namespace ferry::report {
namespace {

using nlohmann::json;

constexpr const char* kCandidateColor = "#3b7dd8";
constexpr const char* kReferenceColor = "#e08a2c";

// Every fetch forbidden: the page is whole as written, and a test can tell if not.
constexpr const char* kPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'";

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1000px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.sub{color:#666}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eee;vertical-align:top}
th{background:#f6f6f6;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.state-succeeded{color:#2d7d48}.state-failed,.state-timed_out{color:#c23030}.state-running{color:#2f69b8}.state-cancelled,.state-skipped{color:#777}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0}.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:110px}
.card .v{font-size:20px;font-weight:600}.card .k{color:#666;font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:12px}svg.chart{background:#fff;border:1px solid #eee;border-radius:6px;max-width:100%;height:auto}
svg text{font:11px system-ui,sans-serif;fill:#333}svg .chart-title{font-size:13px;font-weight:600}svg .grid{stroke:#eee}
svg .axis-label{fill:#666}svg .bar-label{fill:#fff;font-size:10px}svg .no-data{fill:#999;font-size:14px}
.differs td{background:#fff3f0}mark{background:#cfe8d6;border-radius:2px}.text{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.gate-pass{color:#2d7d48;font-weight:600}.gate-fail{color:#c23030;font-weight:600}pre{background:#f6f6f6;padding:8px;overflow:auto}
)";

std::string e(const std::string& s) { return html_escape(s); }

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string clock(int64_t ms) { return ms <= 0 ? "-" : local_time(ms, "%Y-%m-%d %H:%M:%S"); }

std::string seconds(double ms) { return format_number(ms / 1000.0, "%.1f") + " s"; }

std::string card(const std::string& value, const std::string& key) {
  return "<div class=\"card\"><div class=\"v\">" + e(value) + "</div><div class=\"k\">" + e(key) + "</div></div>";
}

std::string state_cell(const std::string& state) {
  return "<td class=\"state-" + e(state) + "\">" + e(state) + "</td>";
}

std::string header(const json& run, int64_t generated_ms) {
  std::string s = "<h1>ferry run " + e(str(run, "id")) + "</h1>";
  int64_t created = int_field(run, "created_ms"), ended = int_field(run, "ended_ms");
  s += "<div class=\"sub\">workflow <code>" + e(str(run, "workflow")) + "</code> · <span class=\"state-" +
       e(str(run, "state")) + "\">" + e(str(run, "state")) + "</span> · started " + e(clock(created));
  if (ended > 0) s += " · took " + e(seconds(static_cast<double>(ended - created)));
  s += " · report written " + e(clock(generated_ms)) + "</div>";
  if (!str(run, "error").empty()) s += "<p class=\"state-failed\">" + e(str(run, "error")) + "</p>";
  return s;
}

std::string stages_section(const json& run, int64_t generated_ms) {
  std::string s = "<h2>Stages</h2>" + svg_timeline(kTimelineId, run, generated_ms);
  s += "<table><tr><th>stage</th><th>kind</th><th>host</th><th>state</th><th class=\"num\">attempts</th>"
       "<th class=\"num\">drops</th><th class=\"num\">duration</th><th>result</th></tr>";
  for (const auto& st : run["stages"]) {
    int64_t started = int_field(st, "started_ms"), ended = int_field(st, "ended_ms");
    std::string result = str(st, "error");
    if (st.contains("exit_code") && st["exit_code"].is_number()) {
      result = "exit " + st["exit_code"].dump() + (result.empty() ? "" : ": " + result);
    }
    s += "<tr><td>" + e(str(st, "name")) + "</td><td>" + e(str(st, "kind")) + "</td><td>" + e(str(st, "host")) +
         "</td>" + state_cell(str(st, "state")) + "<td class=\"num\">" +
         std::to_string(arr_field(st, "attempts").size()) + "</td><td class=\"num\">" +
         std::to_string(arr_field(st, "drops").size()) + "</td><td class=\"num\">" +
         (started > 0 && ended > 0 ? e(seconds(static_cast<double>(ended - started))) : "-") + "</td><td>" + e(result) +
         "</td></tr>";
  }
  return s + "</table>";
}

std::string copies_section(const json& copies) {
  if (copies.empty()) return "";
  std::string s = "<h2>Copies</h2><table><tr><th>stage</th><th>state</th><th>route</th><th class=\"num\">files</th>"
                  "<th class=\"num\">bytes</th><th class=\"num\">sent</th><th class=\"num\">resent</th>"
                  "<th class=\"num\">already there</th><th class=\"num\">seconds</th><th class=\"num\">rate</th></tr>";
  auto b = [](const json& c, const char* k) {
    return c.contains(k) && c[k].is_number() ? byte_size(c[k].get<double>()) : "-";
  };
  for (const auto& c : copies) {
    s += "<tr><td>" + e(str(c, "stage")) + "</td>" + state_cell(str(c, "state")) + "<td title=\"" +
         e(str(c, "reason")) + "\">" + e(str(c, "route")) + "</td><td class=\"num\">" + e(str(c, "files")) +
         "</td><td class=\"num\">" + b(c, "bytes_total") + "</td><td class=\"num\">" + b(c, "bytes_sent") +
         "</td><td class=\"num\">" + b(c, "bytes_resent") + "</td><td class=\"num\">" + b(c, "bytes_already_there") +
         "</td><td class=\"num\">" +
         (c["seconds"].is_number() ? format_number(c["seconds"].get<double>(), "%.2f") : "-") +
         "</td><td class=\"num\">" +
         (c["mib_per_s"].is_number() ? format_number(c["mib_per_s"].get<double>(), "%.1f") + " MiB/s" : "-") +
         "</td></tr>";
  }
  return s + "</table>";
}

// τ per checkpoint step; evals that name no step are placed by their order.
std::string tau_curve(const json& evals) {
  ChartSeries cand{"candidate", kCandidateColor, {}}, ref{"reference", kReferenceColor, {}};
  const bool all_steps = every_point_has_a_step(evals);
  tau_points(evals, all_steps, &cand, &ref);
  const ChartFrame f = tau_frame(kTauCurveId, "τ per checkpoint", all_steps);
  std::vector<ChartSeries> series = {cand};
  if (!ref.points.empty()) series.push_back(ref);
  return svg_line_chart(f, series);
}

// One series of values indexed 0..n-1 (a histogram's lengths, a block's positions).
template <typename Number>
ChartSeries indexed_series(const std::string& name, const char* color, const std::vector<Number>& values) {
  ChartSeries s{name, color, {}};
  for (size_t k = 0; k < values.size(); ++k)
    s.points.push_back({static_cast<double>(k), static_cast<double>(values[k])});
  return s;
}

// The candidate's series for one figure of a DecodeRun, and the reference's if it ran.
template <typename Number>
std::vector<ChartSeries> both_runs(const eval::EvalReport& ev, std::vector<Number> eval::DecodeRun::*field) {
  std::vector<ChartSeries> out = {indexed_series("candidate", kCandidateColor, ev.candidate.*field)};
  if (ev.reference_run) out.push_back(indexed_series("reference", kReferenceColor, (*ev.reference_run).*field));
  return out;
}

ChartFrame small_frame(const char* id, const char* title, const char* x_label, const char* y_label,
                       const char* y_format) {
  ChartFrame f;
  f.id = id, f.title = title, f.x_label = x_label, f.y_label = y_label, f.y_format = y_format;
  f.width = 470;
  return f;
}

std::string acceptance_charts(const eval::EvalReport& ev) {
  std::vector<ChartSeries> hs = both_runs(ev, &eval::DecodeRun::acceptance_histogram);
  std::vector<std::string> lengths;
  for (size_t k = 0; k < hs[0].points.size(); ++k) lengths.push_back(std::to_string(k));
  const ChartFrame hf = small_frame(kHistogramId, "acceptance length per verify step",
                                    "acceptance length (accepted drafts + 1)", "steps", "%.0f");
  const ChartFrame pf = small_frame(kPositionsId, "acceptance by block position", "position in block",
                                    "share of steps accepted", "%.3f");
  return "<div class=\"charts\">" + svg_bar_chart(hf, lengths, hs) +
         svg_line_chart(pf, both_runs(ev, &eval::DecodeRun::acceptance_rate)) + "</div>";
}

std::string diff_section(const std::optional<eval::DrafterDiff>& diff) {
  if (!diff) return "";
  return drafter_diff_html(*diff, "<h3>Drafter vs reference</h3>", "candidate", "reference");
}

}  // namespace

std::string drafter_diff_html(const eval::DrafterDiff& d, const std::string& heading, const std::string& a,
                              const std::string& b) {
  const eval::DrafterDiff* diff = &d;
  std::string s = heading + "<table><tr><th>config field</th><th>" + e(a) + "</th><th>" + e(b) + "</th></tr>";
  for (const auto& f : diff->fields) {
    s += std::string("<tr") + (f.differs ? " class=\"differs\"" : "") + "><td>" + e(f.name) + "</td><td>" +
         e(f.candidate) + "</td><td>" + e(f.reference) + "</td></tr>";
  }
  s += "</table><table><tr><th>tensor</th><th>issue</th><th>" + e(a) + "</th><th>" + e(b) +
       "</th><th class=\"num\">relative distance</th></tr>";
  for (const auto& t : diff->tensors) {
    s += std::string("<tr") + (t.issue.empty() || t.issue == "none" ? "" : " class=\"differs\"") + "><td>" + e(t.name) +
         "</td><td>" + e(t.issue) + "</td><td>" + e(t.candidate) + "</td><td>" + e(t.reference) +
         "</td><td class=\"num\">" + (t.relative_distance >= 0 ? format_number(t.relative_distance, "%.4f") : "-") +
         "</td></tr>";
  }
  return s + "</table>";
}

namespace {

// The response with its accepted-draft spans (between ⟦ and ⟧ in marked_text) as <mark>.
std::string marked_response(const eval::ResponseText& r) {
  const std::string& marked = r.marked_text;
  if (marked.empty()) return e(r.text);
  static const std::string kOpen = "\u27e6", kClose = "\u27e7";
  std::string out;
  size_t i = 0;
  while (i < marked.size()) {
    size_t open = marked.find(kOpen, i);
    if (open == std::string::npos) {
      out += e(marked.substr(i));
      break;
    }
    out += e(marked.substr(i, open - i));
    size_t close = marked.find(kClose, open + kOpen.size());
    size_t end = close == std::string::npos ? marked.size() : close;
    out += "<mark>" + e(marked.substr(open + kOpen.size(), end - open - kOpen.size())) + "</mark>";
    i = close == std::string::npos ? marked.size() : close + kClose.size();
  }
  return out;
}

std::string responses_section(const eval::EvalReport& ev) {
  if (ev.responses.empty()) return "";
  const std::vector<double> no_taus;
  const std::vector<double>& ref_taus = ev.reference_run ? ev.reference_run->response_taus : no_taus;
  std::string s = "<h3>Per prompt</h3><p class=\"sub\">highlighted: tokens that came from accepted drafts</p>"
                  "<table id=\"responses\"><tr><th class=\"num\">line</th><th class=\"num\">τ</th>"
                  "<th class=\"num\">reference τ</th><th>= plain</th><th>response</th></tr>";
  for (size_t i = 0; i < ev.responses.size(); ++i) {
    const eval::ResponseText& r = ev.responses[i];
    std::string same = r.matches_baseline < 0 ? "-" : (r.matches_baseline ? "yes" : "NO");
    s += "<tr class=\"response\"><td class=\"num\">" + std::to_string(r.line) + "</td><td class=\"num\">" +
         format_number(r.tau, "%.2f") + "</td><td class=\"num\">" +
         (i < ref_taus.size() ? format_number(ref_taus[i], "%.2f") : "-") + "</td><td>" + same +
         "</td><td class=\"text\">" + marked_response(r) + "</td></tr>";
  }
  return s + "</table>";
}

// Evals still decoding (the run is not over): how far each is, and its τ so far.
std::string running_evals_section(const json& report) {
  if (!report.contains("running_evals") || !report["running_evals"].is_array()) return "";
  std::string s;
  for (const auto& r : report["running_evals"]) {
    s += "<p class=\"running\">eval <code>" + e(str_field(r, "stage")) +
         "</code> running: " + e(str_field(r, "phase")) + " " + std::to_string(int_field(r, "prompts_done")) + " of " +
         std::to_string(int_field(r, "prompts_total")) + " prompts";
    if (int_field(r, "runs") > 1) {
      s += " (run " + std::to_string(int_field(r, "run")) + " of " + std::to_string(int_field(r, "runs")) + ")";
    }
    if (r.contains("tau_so_far") && r["tau_so_far"].is_number()) {
      const bool partial = str_field(r, "phase") == "candidate";  // later runs: the candidate's final τ
      s += (partial ? ", τ so far " : ", candidate τ ") + format_number(r["tau_so_far"].get<double>(), "%.3f") +
           (partial ? " (partial)" : "");
    }
    if (r.contains("eta_s") && r["eta_s"].is_number()) {
      s += ", about " + std::to_string(static_cast<int64_t>(r["eta_s"].get<double>())) + " s left";
    }
    s += "</p>";
  }
  return s.empty() ? "" : "<h2>Eval in progress</h2>" + s;
}

std::string gate_line(bool passed, const std::string& message) {
  return std::string("<p>gate: <span class=\"") + (passed ? "gate-pass\">passed" : "gate-fail\">FAILED") + "</span>" +
         (message.empty() ? "" : " — " + e(message)) + "</p>";
}

// Where a checkpoint's reference and baseline runs came from: a watch decodes them
// once and its later checkpoints reuse them (their speedup: against that timing).
std::string baseline_cell(const json& p) {
  if (!p.contains("baseline_reused") || !p["baseline_reused"].is_boolean()) return "<td>-</td>";
  return p["baseline_reused"].get<bool>() ? "<td class=\"baseline-reused\">reused</td>" : "<td>decoded</td>";
}

// The checkpoints' τ, one row each (run_report.cc made them from the stored reports).
std::string evals_table(const json& evals) {
  std::string s =
      "<table><tr><th class=\"num\">step</th><th>drafter</th><th class=\"num\">τ</th>"
      "<th class=\"num\">reference τ</th><th class=\"num\">speedup</th><th>baseline</th><th>gate</th></tr>";
  for (const auto& p : evals) {
    s += "<tr class=\"checkpoint\"><td class=\"num\">" + e(str(p, "step")) + "</td><td>" + e(str(p, "drafter")) +
         "</td><td class=\"num\">" + (p["tau"].is_number() ? format_number(p["tau"].get<double>(), "%.3f") : "-") +
         "</td><td class=\"num\">" +
         (p["reference_tau"].is_number() ? format_number(p["reference_tau"].get<double>(), "%.3f") : "-") +
         "</td><td class=\"num\">" +
         (p["speedup"].is_number() ? format_number(p["speedup"].get<double>(), "%.2f") + "×" : "-") + "</td>" +
         baseline_cell(p) + "<td>" + e(str_field(p, "gate", bool_field(p, "gate_passed") ? "passed" : "failed")) +
         "</td></tr>";
  }
  return s + "</table>";
}

// Said when the newest eval took its reference and baseline runs from a watch's store.
std::string shared_runs_line(const eval::EvalReport& ev) {
  if (!ev.baseline_reused) return "";
  return "<p class=\"baseline-reused\">reference and baseline: reused, as the eval of <code>" +
         e(ev.baseline_computed_by) + "</code> decoded them (key " + e(ev.baseline_key) +
         "); the speedup is against that stored baseline's timing</p>";
}

// Drafted and accepted tokens and τ's spread across responses (tau_spread.h), when drafted.
std::string counts_line(const eval::EvalReport& ev) {
  const eval::DecodeRun& c = ev.candidate;
  if (c.drafted_tokens <= 0) return "";
  const eval::TauSpread& t = c.tau_spread;
  return "<p class=\"counts\">drafted " + std::to_string(c.drafted_tokens) + " tokens, accepted " +
         std::to_string(c.accepted_tokens) + " (acceptance rate " + format_number(c.overall_acceptance_rate, "%.3f") +
         "); τ across responses: sd " + format_number(t.sd, "%.3f") + ", p10 " + format_number(t.p10, "%.3f") +
         ", p50 " + format_number(t.p50, "%.3f") + ", p90 " + format_number(t.p90, "%.3f") +
         ", 95 % bootstrap interval " + format_number(t.ci95_low, "%.3f") + "–" + format_number(t.ci95_high, "%.3f") +
         "</p>";
}

// The newest eval's cards and gate; `ev` is its stored report read typed.
std::string eval_cards(const eval::EvalReport& ev, size_t evaluated) {
  std::string s = "<div class=\"cards\">" + card(format_number(ev.candidate.tau, "%.3f"), "τ candidate");
  if (ev.reference_run) s += card(format_number(ev.reference_run->tau, "%.3f"), "τ reference");
  if (ev.ratio_to_reference) s += card(format_number(*ev.ratio_to_reference, "%.3f"), "ratio to reference");
  if (ev.speedup > 0) s += card(format_number(ev.speedup, "%.2f") + "×", "speedup over plain decoding");
  if (ev.reference_speedup > 0) s += card(format_number(ev.reference_speedup, "%.2f") + "×", "reference speedup");
  s += card(std::to_string(evaluated), evaluated == 1 ? "checkpoint evaluated" : "checkpoints evaluated");
  // A watch's last checkpoint before the stage judged it (still running) has no verdict yet.
  s += "</div>" + shared_runs_line(ev);
  if (!ev.gate_deferred.empty()) return s + "<p>gate: " + e(ev.gate_deferred) + "</p>";
  return s + gate_line(ev.gate_passed, ev.gate_message);
}

std::string eval_section(const json& report) {
  const json& evals = report["evals"];
  if (evals.empty() || !report["eval"].is_object()) return running_evals_section(report);
  std::string s = running_evals_section(report) + "<h2>Eval</h2>";
  // The stored report, read as the type the engine wrote; one a host wrote wrong
  // is shown as unreadable, without a verdict.
  Result<eval::EvalReport> read = eval::eval_report_from_json(report["eval"]);
  if (!read.ok()) {
    return s + gate_line(false, "the newest eval's report cannot be read: " + read.status().message()) +
           tau_curve(evals) + evals_table(evals);
  }
  const eval::EvalReport& ev = *read;
  s += eval_cards(ev, evals.size()) + tau_curve(evals) + dataset_tau_chart(evals) + evals_table(evals);
  s += "<h3>Newest eval (stage " + e(str_field(report, "eval_stage")) + ", drafter <code>" + e(ev.drafter) +
       "</code>)</h3>";
  s += dataset_table_html(ev);
  s += acceptance_charts(ev);
  s += "<p class=\"sub\">target <code>" + e(ev.target) + "</code> (" + e(ev.target_architecture) +
       "), reference <code>" + e(ev.reference) + "</code>, " + std::to_string(ev.prompt_count) + " prompts, block " +
       std::to_string(ev.block_size) + ", up to " + std::to_string(ev.max_new_tokens) + " new tokens, " + e(ev.dtype) +
       " on " + e(ev.device) + ", decoding " + e(ev.sampling.regime()) + "</p>";
  s += counts_line(ev);
  s += inputs_table_html(ev.fingerprints);
  s += diff_section(ev.diff);
  s += responses_section(ev);
  return s;
}

}  // namespace

std::string html_page_start(const std::string& title) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  s += std::string("<meta http-equiv=\"Content-Security-Policy\" content=\"") + kPolicy + "\">";
  s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  return s + "<title>" + e(title) + "</title><style>" + kStyle + "</style></head><body>\n";
}

std::string render_html_report(const json& report) {
  const json& run = report["run"];
  const int64_t generated = int_field(report, "generated_ms");
  std::string s = html_page_start("ferry report " + str(run, "id"));
  s += header(run, generated);
  s += stages_section(run, generated);
  s += copies_section(arr_field(report, "copies"));
  s += eval_section(report);
  s += "\n</body></html>\n";
  return s;
}

}  // namespace ferry::report
