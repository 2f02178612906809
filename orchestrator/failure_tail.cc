#include "orchestrator/failure_tail.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "base/terminal_text.h"
#include "base/unique_fd.h"
#include "orchestrator/scheduler.h"
#include "orchestrator/status_view.h"

namespace ferry {
namespace {

// A line longer than this is cut: one runaway line must not fill the screen.
constexpr size_t kMaxTailLineBytes = 400;

// Does not end inside a UTF-8 sequence.
std::string cut_utf8(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "…";
}

}  // namespace

std::vector<std::string> log_tail(const std::string& path, bool* cut) {
  *cut = false;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return {};
  off_t size = ::lseek(fd.get(), 0, SEEK_END);
  if (size <= 0) return {};
  // Enough for the lines we keep, and one more to know where the first begins.
  const off_t want = static_cast<off_t>(kFailureTailLines * kMaxTailLineBytes);
  off_t from = std::max<off_t>(0, size - want);
  std::string text(static_cast<size_t>(size - from), '\0');
  ssize_t n = ::pread(fd.get(), text.data(), text.size(), from);
  if (n <= 0) return {};
  text.resize(static_cast<size_t>(n));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  std::vector<std::string> lines;
  size_t end = text.size();
  size_t bytes = 0;
  while (static_cast<int>(lines.size()) < kFailureTailLines) {
    size_t nl = end == 0 ? std::string::npos : text.rfind('\n', end - 1);
    size_t begin = nl == std::string::npos ? 0 : nl + 1;
    if (nl == std::string::npos && from > 0) {  // the line began before what we read
      if (lines.empty())
        lines.push_back(escape_controls("…" + text.substr(text.size() - std::min(text.size(), kMaxTailLineBytes))));
      *cut = true;
      break;
    }
    std::string line = cut_utf8(text.substr(begin, end - begin), kMaxTailLineBytes);
    if (bytes + line.size() > kFailureTailBytes && !lines.empty()) {
      *cut = true;
      break;
    }
    bytes += line.size();
    lines.push_back(escape_controls(line));
    if (nl == std::string::npos) break;
    end = nl;
    if (static_cast<int>(lines.size()) == kFailureTailLines) *cut = true;
  }
  std::reverse(lines.begin(), lines.end());
  return lines;
}

Result<std::vector<FailedAttempt>> failed_attempts(Store& store, const RunRecord& run,
                                                   const std::vector<StageRecord>& stages,
                                                   const std::string& logs_dir) {
  std::vector<FailedAttempt> out;
  for (const auto& s : stages) {
    if (s.state != StageState::kFailed && s.state != StageState::kTimedOut) continue;
    auto attempts = store.attempts(run.id, s.name);
    if (!attempts.ok()) return attempts.status();
    for (const auto& a : *attempts) {
      if (a.state != StageState::kFailed && a.state != StageState::kTimedOut) continue;
      FailedAttempt f;
      f.stage = s.name;
      f.attempt = a.attempt;
      f.state = a.state;
      f.error = a.error;
      f.tail = log_tail(Scheduler::log_path(logs_dir, run.id, s.name, a.attempt), &f.cut);
      f.logs_command = "ferry logs " + run.id + " " + s.name;
      if (a.attempt != s.attempt) f.logs_command += " --attempt " + std::to_string(a.attempt);
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::string render_failures(const std::vector<FailedAttempt>& failures, bool color) {
  std::string out;
  for (const auto& f : failures) {
    std::string head = f.stage + " attempt " + std::to_string(f.attempt) + " " + state_name(f.state);
    if (!f.error.empty()) head += ": " + escape_controls(f.error);
    out += "\n" + (color ? "\033[31m" + head + "\033[0m" : head) + "\n";
    if (f.tail.empty()) {
      out += "  (its log is empty)\n";
    } else {
      if (f.cut) out += "  …\n";
      for (const auto& line : f.tail) out += "  | " + line + "\n";
    }
    out += "  the whole log: " + f.logs_command + "\n";
  }
  return out;
}

nlohmann::json failures_json(const std::vector<FailedAttempt>& failures) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : failures) {
    arr.push_back({{"stage", f.stage},
                   {"attempt", f.attempt},
                   {"state", state_name(f.state)},
                   {"error", f.error},
                   {"log_tail", f.tail},
                   {"log_tail_cut", f.cut},
                   {"logs_command", f.logs_command}});
  }
  return arr;
}

std::string render_status_with_failures(Store& store, const RunRecord& run, const std::vector<StageRecord>& stages,
                                        const std::string& logs_dir, bool color) {
  std::string out = render_status(run, stages, store.path(), color);
  auto failures = failed_attempts(store, run, stages, logs_dir);
  if (failures.ok()) return out + render_failures(*failures, color);
  return out + "\n(the failed attempts cannot be read: " + failures.status().message() + ")\n";
}

nlohmann::json run_json_with_failures(Store& store, const RunRecord& run, const std::vector<StageRecord>& stages,
                                      const std::string& logs_dir) {
  nlohmann::json j = run_to_json(run, stages, store.path());
  auto failures = failed_attempts(store, run, stages, logs_dir);
  j["failures"] = failures.ok() ? failures_json(*failures) : nlohmann::json::array();
  return j;
}

}  // namespace ferry
