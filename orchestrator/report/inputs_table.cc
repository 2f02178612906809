#include "orchestrator/report/inputs_table.h"

#include <algorithm>

#include "base/peer_json.h"
#include "jobs/eval/run/eval_report_json.h"
#include "orchestrator/report/html_escape.h"

namespace ferry::report {
namespace {

using nlohmann::json;

std::string e(const std::string& s) { return html_escape(s); }

// A digest, and the copy's manifest under it when ferry copied the folder.
std::string digest_cell(const std::string& digest, const std::string& manifest) {
  std::string s = "<td><code>" + e(digest) + "</code>";
  if (!manifest.empty()) s += "<br><span class=\"sub\">copy manifest <code>" + e(manifest) + "</code></span>";
  return s + "</td>";
}

// A run's newest eval's inputs; none when it has no eval or one that cannot be read
// (the page says so elsewhere).
std::vector<eval::InputFingerprint> newest_inputs(const json& run) {
  if (!run.contains("eval") || !run["eval"].is_object()) return {};
  auto ev = eval::eval_report_from_json(run["eval"]);
  return ev.ok() ? ev->fingerprints : std::vector<eval::InputFingerprint>{};
}

}  // namespace

std::string inputs_table_html(const std::vector<eval::InputFingerprint>& inputs) {
  if (inputs.empty()) return "";
  std::string s = std::string("<table id=\"") + kInputsId + "\"><tr><th>input</th><th>by content</th></tr>";
  for (const auto& f : inputs)
    s += "<tr class=\"input\"><td>" + e(f.what) + "</td>" + digest_cell(f.digest, f.copy_manifest) + "</tr>";
  return s + "</table>";
}

json compare_inputs(const json& runs) {
  std::vector<std::string> ids;
  std::vector<std::vector<eval::InputFingerprint>> read;
  std::vector<std::string> order;  // input names, in the order first seen
  for (const auto& r : runs) {
    ids.push_back(str_field(r["run"], "id"));
    read.push_back(newest_inputs(r));
    for (const auto& f : read.back()) {
      if (std::find(order.begin(), order.end(), f.what) == order.end()) order.push_back(f.what);
    }
  }
  json out = json::array();
  for (const auto& what : order) {
    json row = {{"what", what}, {"runs", json::array()}};
    bool same = true;
    bool unrecorded = false;  // a run whose eval recorded no inputs at all
    const eval::InputFingerprint* first = nullptr;
    std::string manifest;  // the first copy manifest seen
    for (size_t k = 0; k < read.size(); ++k) {
      auto it = std::find_if(read[k].begin(), read[k].end(), [&](const auto& f) { return f.what == what; });
      if (it == read[k].end()) {
        row["runs"].push_back({{"run", ids[k]}, {"recorded", !read[k].empty()}});
        unrecorded = unrecorded || read[k].empty();
        same = same && read[k].empty();  // one that records inputs but not this one: differs
        continue;
      }
      json cell = {{"run", ids[k]}, {"digest", it->digest}};
      if (!it->copy_manifest.empty()) cell["copy_manifest"] = it->copy_manifest;
      row["runs"].push_back(std::move(cell));
      if (first == nullptr) first = &*it;
      same = same && it->digest == first->digest;
      if (!it->copy_manifest.empty()) {
        same = same && (manifest.empty() || manifest == it->copy_manifest);
        if (manifest.empty()) manifest = it->copy_manifest;
      }
    }
    row["same"] = same && !unrecorded;
    row["verdict"] = !same ? "differs" : unrecorded ? "unknown" : "same";
    out.push_back(std::move(row));
  }
  return out;
}

std::string inputs_compare_html(const json& inputs) {
  if (!inputs.is_array() || inputs.empty()) return "";
  std::string s = std::string("<table id=\"") + kInputsCompareId + "\"><tr><th>input</th>";
  for (const auto& cell : inputs[0]["runs"]) s += "<th>" + e(str_field(cell, "run")) + "</th>";
  s += "<th>in every run</th></tr>";
  for (const auto& row : inputs) {
    const std::string verdict = str_field(row, "verdict", bool_field(row, "same") ? "same" : "differs");
    const char* row_class = verdict == "same"      ? "input-same"
                            : verdict == "unknown" ? "input-unknown"
                                                   : "input-differs differs";
    s += std::string("<tr class=\"") + row_class + "\"><td>" + e(str_field(row, "what")) + "</td>";
    for (const auto& cell : row["runs"]) {
      if (cell.contains("digest")) {
        s += digest_cell(str_field(cell, "digest"), str_field(cell, "copy_manifest"));
      } else {
        s += bool_field(cell, "recorded", true) ? "<td>not read</td>"
                                                : "<td>not recorded (no eval, or one older than fingerprints)</td>";
      }
    }
    s += "<td>" +
         std::string(verdict == "same"      ? "the same"
                     : verdict == "unknown" ? "unknown"
                                            : "differs") +
         "</td></tr>";
  }
  return s + "</table>";
}

}  // namespace ferry::report
