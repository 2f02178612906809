// `ferry report`: the run's page, its data as JSON, and the flat metrics export
// (orchestrator/report/). Reads the store only.
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sys/stat.h>

#include "orchestrator/cli.h"
#include "orchestrator/report/compare_report.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/metrics_export.h"
#include "orchestrator/report/run_report.h"

namespace ferry::cli {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Whole or not at all: a reader never opens half a page.
Status write_file(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return errno_status("cannot write " + path, errno);
    out << content;
    if (!out.flush()) return internal_error("writing " + path + " failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = errno_status("cannot move " + tmp + " to " + path, errno);
    std::remove(tmp.c_str());
    return s;
  }
  return Status();
}

// Several runs on one page: the JSON (--json) or the page, to -o or the reports folder.
int compare_runs(const Common& c, const ReportOptions& o, Store& store) {
  if (!o.metrics.empty()) return fail(invalid_argument("--metrics takes one run; give one run id"));
  auto report = report::collect_compare_report(store, o.runs, ferry_home(c.db));
  if (!report.ok()) return fail(report.status());
  std::string path = o.out;
  if (o.json && path.empty()) {
    std::cout << report->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (path.empty()) {
    const std::string dir = ferry_home(c.db) + "/reports";
    ::mkdir(dir.c_str(), 0755);
    std::string name;
    for (const auto& r : (*report)["runs"]) name += (name.empty() ? "" : "+") + r["run"].value("id", std::string());
    path = dir + "/" + name + ".html";
  }
  Status s = write_file(path, o.json ? report->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                                     : report::render_compare_report(*report));
  if (!s.ok()) return fail(s);
  std::cout << path << "\n";
  return kExitOk;
}

}  // namespace

int cmd_report(const Common& c, const ReportOptions& o) {
  auto store = open_store_read_only(c);
  if (!store.ok()) return fail(store.status());
  if (o.runs.size() > 1) return compare_runs(c, o, **store);
  auto report = report::collect_run_report(**store, o.runs.empty() ? "last" : o.runs[0]);
  if (!report.ok()) return fail(report.status());
  const std::string run_id = (*report)["run"].value("id", std::string());

  if (!o.metrics.empty()) {
    if (o.metrics == "-") {
      std::cout << report::metrics_jsonl(*report);
    } else {
      Status s = write_file(o.metrics, ends_with(o.metrics, ".csv") ? report::metrics_csv(*report)
                                                                    : report::metrics_jsonl(*report));
      if (!s.ok()) return fail(s);
      std::cerr << "metrics: " << o.metrics << "\n";
    }
  }
  if (o.json) {
    std::string text = report->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (o.out.empty()) {
      std::cout << text;
      return kExitOk;
    }
    Status s = write_file(o.out, text);
    if (!s.ok()) return fail(s);
    std::cout << o.out << "\n";
    return kExitOk;
  }
  if (o.metrics == "-") return kExitOk;  // stdout holds the rows; no page unless asked for with -o
  std::string path = o.out;
  if (path.empty()) {
    const std::string dir = ferry_home(c.db) + "/reports";
    ::mkdir(dir.c_str(), 0755);
    path = dir + "/" + run_id + ".html";
  }
  Status s = write_file(path, report::render_html_report(*report));
  if (!s.ok()) return fail(s);
  std::cout << path << "\n";
  return kExitOk;
}

}  // namespace ferry::cli
