// PushProgress: the lines `ferry-agent push` writes to its job log, and their
// parser on the coordinator, which turns them into the copy stage's progress
// (`ferry status`, the terminal) and its final figures.
//
//   ferry-push progress done=B total=B sent=B resent=B skipped=B rate=B/s elapsed_ms=MS files=DONE/ALL
//   ferry-push error: MESSAGE
//
// Progress lines are printed about once a second and once more at the end; a
// line is plain `key=value` words so `ferry logs` stays readable. Unknown keys
// are ignored (an older coordinator reads a newer agent's lines); a line that
// lacks done or total is not a progress line. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ferry {

inline constexpr const char* kPushProgressPrefix = "ferry-push progress ";
inline constexpr const char* kPushErrorPrefix = "ferry-push error: ";

struct PushProgress {
  int64_t bytes_done = 0;  // verified at the destination (counting what was already there)
  int64_t bytes_total = 0;
  int64_t bytes_sent = 0;  // crossed the wire, re-sends included
  int64_t bytes_resent = 0;
  int64_t bytes_skipped = 0;  // already at the destination before this push
  double rate = 0;            // bytes/s moved by this push
  int64_t elapsed_ms = 0;
  int files_done = 0;
  int files = 0;
};

/// One progress line, without the newline.
std::string format_push_progress(const PushProgress& p);

/// The progress in `line` (a trailing '\r' or '\n' is ignored), or nullopt
/// when it is not a well-formed progress line.
std::optional<PushProgress> parse_push_progress(const std::string& line);

/// The message of a `ferry-push error:` line, or nullopt.
std::optional<std::string> parse_push_error(const std::string& line);

}  // namespace ferry
