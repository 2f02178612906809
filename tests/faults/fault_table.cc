#include "tests/faults/fault_table.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace ferry::e2e {

std::vector<Outcome>& table() {
  static std::vector<Outcome> t;
  return t;
}

namespace {

const char* yes_no(const std::optional<bool>& b) { return !b ? "-" : *b ? "yes" : "NO"; }

// Prints the table after the last trial, whichever test file it came from.
class PrintTable : public ::testing::Environment {
 public:
  void TearDown() override {
    if (table().empty()) return;
    std::printf("\nfault suite (the SSH testbed, short training):\n");
    std::printf("  %-44s %-7s %-10s %-12s %-8s %-7s %s\n", "trial", "run", "identical", "launched 1x", "resumes", "tau",
                "figure");
    for (const auto& o : table()) {
      char tau[16] = "-";
      if (o.tau >= 0) std::snprintf(tau, sizeof tau, "%.4f", o.tau);
      std::printf("  %-44s %-7s %-10s %-12s %-8d %-7s %s%s%s\n", o.trial.c_str(), o.succeeded ? "ok" : "FAILED",
                  yes_no(o.identical), yes_no(o.launched_once), o.resumes, tau, o.figure.c_str(),
                  o.note.empty() ? "" : "  ", o.note.c_str());
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kPrintTable = ::testing::AddGlobalTestEnvironment(new PrintTable);

}  // namespace
std::string fixed(double v, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ferry::e2e
