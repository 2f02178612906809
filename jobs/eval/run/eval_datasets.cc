#include "jobs/eval/run/eval_datasets.h"

#include <iomanip>
#include <set>
#include <sstream>

#include "base/file_hash.h"
#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {
namespace {

constexpr size_t kMaxDatasetName = 100;

// z-lab's mean of per-response means over rows [first, first + n), summed in order
// from the first row as finish_decode_run sums a whole run: an eval of the dataset's
// file alone gives the same value bit for bit.
double mean_of(const std::vector<double>& rows, int64_t first, int64_t n) {
  double sum = 0;
  for (int64_t i = first; i < first + n; ++i) sum += rows[static_cast<size_t>(i)];
  return n > 0 ? sum / static_cast<double>(n) : 0;
}

// Mean TPOT over rows [first, first + n) that have tokens (-1 marks none), 0 when none do.
double mean_tpot(const std::vector<double>& tpots, int64_t first, int64_t n) {
  double sum = 0;
  int64_t count = 0;
  for (int64_t i = first; i < first + n; ++i) {
    if (tpots[static_cast<size_t>(i)] < 0) continue;
    sum += tpots[static_cast<size_t>(i)];
    ++count;
  }
  return count > 0 ? sum / static_cast<double>(count) : 0;
}

bool covers(const std::vector<double>& rows, const DatasetRow& d) {
  return d.first_prompt >= 0 && d.prompts >= 0 && d.first_prompt + d.prompts <= static_cast<int64_t>(rows.size());
}

std::string fixed(double x, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << x;
  return out.str();
}

}  // namespace

AcceptanceCounts acceptance_counts(const std::vector<int64_t>& acceptance_lengths, int64_t block_size) {
  AcceptanceCounts c;
  for (int64_t a : acceptance_lengths) {
    c.drafted += block_size - 1;
    c.accepted += a - 1;
  }
  return c;
}

double acceptance_ratio(const AcceptanceCounts& c) {
  return c.drafted > 0 ? static_cast<double>(c.accepted) / static_cast<double>(c.drafted) : 0;
}

bool valid_dataset_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxDatasetName) return false;
  for (char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '-' || ch == '.';
    if (!ok) return false;
  }
  return true;
}

DatasetFile parse_dataset_arg(const std::string& value) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || !valid_dataset_name(value.substr(0, eq))) return {"", value};
  return {value.substr(0, eq), value.substr(eq + 1)};
}

Status check_datasets(const std::vector<DatasetFile>& datasets, const std::string& prompts) {
  if (datasets.empty()) return Status();
  if (!prompts.empty()) {
    return invalid_argument("prompts: give one file or named datasets (NAME=FILE), not both ('" + prompts + "')");
  }
  std::set<std::string> seen;
  for (const auto& d : datasets) {
    if (!valid_dataset_name(d.name)) {
      return invalid_argument("prompts: dataset name '" + d.name + "' is not 1 to 100 of [A-Za-z0-9_.-]");
    }
    if (!seen.insert(d.name).second) return invalid_argument("prompts: dataset '" + d.name + "' is named twice");
    if (d.prompts.empty()) return invalid_argument("prompts: dataset '" + d.name + "' names no file");
  }
  return Status();
}

Result<nlohmann::json> datasets_content(const std::vector<DatasetFile>& datasets) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : datasets) {
    auto hash = xxh128_file_hex(d.prompts);
    if (!hash.ok()) return hash.status().with_context("dataset '" + d.name + "'");
    out.push_back({{"name", d.name}, {"content", *hash}});
  }
  return out;
}

std::string describe_datasets(const std::vector<DatasetFile>& datasets) {
  std::string s;
  for (const auto& d : datasets) s += (s.empty() ? "" : " ") + d.name + "=" + d.prompts;
  return s;
}

void count_dataset_acceptance(EvalReport* report) {
  for (DatasetRow& d : report->datasets) {
    AcceptanceCounts counts;
    for (int64_t i = d.first_prompt; i < d.first_prompt + d.prompts; ++i) {
      if (i < 0 || i >= static_cast<int64_t>(report->responses.size())) break;
      AcceptanceCounts r =
          acceptance_counts(report->responses[static_cast<size_t>(i)].acceptance_lengths, report->candidate.block_size);
      counts.drafted += r.drafted;
      counts.accepted += r.accepted;
    }
    d.drafted_tokens = counts.drafted;
    d.accepted_tokens = counts.accepted;
  }
}

void finish_datasets(EvalReport* report) {
  for (DatasetRow& d : report->datasets) {
    d.tau = 0;
    d.reference_tau.reset();
    d.ratio_to_reference.reset();
    d.speedup = 0;
    d.acceptance_rate = acceptance_ratio({d.drafted_tokens, d.accepted_tokens});
    if (!covers(report->candidate.response_taus, d)) continue;  // a report that does not add up: no figures
    d.tau = mean_of(report->candidate.response_taus, d.first_prompt, d.prompts);
    if (report->reference_run && covers(report->reference_run->response_taus, d)) {
      d.reference_tau = mean_of(report->reference_run->response_taus, d.first_prompt, d.prompts);
      if (*d.reference_tau > 0) d.ratio_to_reference = d.tau / *d.reference_tau;
    }
    if (report->baseline && covers(report->baseline->response_tpots, d) &&
        covers(report->candidate.response_tpots, d)) {
      const double cand = mean_tpot(report->candidate.response_tpots, d.first_prompt, d.prompts);
      if (cand > 0) d.speedup = mean_tpot(report->baseline->response_tpots, d.first_prompt, d.prompts) / cand;
    }
  }
}

std::string datasets_text(const EvalReport& report) {
  if (report.datasets.empty()) return "";
  // Datasets as columns, one figure per line, as the DFlash paper's table reads.
  constexpr int kLabel = 18, kColumn = 12;
  std::ostringstream out;
  auto row = [&](const std::string& label, auto cell) {
    out << std::left << std::setw(kLabel) << label << std::right;
    for (const DatasetRow& d : report.datasets) out << std::setw(kColumn) << cell(d);
    out << "\n";
  };
  out << "datasets\n";
  row("", [](const DatasetRow& d) { return d.name.size() < kColumn ? d.name : d.name.substr(0, kColumn - 2) + ".."; });
  row("  prompts", [](const DatasetRow& d) { return std::to_string(d.prompts); });
  row("  tau", [](const DatasetRow& d) { return fixed(d.tau, 3); });
  if (report.reference_run) {
    row("  reference tau", [](const DatasetRow& d) { return d.reference_tau ? fixed(*d.reference_tau, 3) : "-"; });
    row("  ratio", [](const DatasetRow& d) { return d.ratio_to_reference ? fixed(*d.ratio_to_reference, 3) : "-"; });
  }
  if (report.baseline) row("  speedup", [](const DatasetRow& d) { return fixed(d.speedup, 2) + "x"; });
  row("  acceptance rate", [](const DatasetRow& d) { return fixed(d.acceptance_rate, 3); });
  return out.str();
}

}  // namespace ferry::eval
