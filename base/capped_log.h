// A job's output kept within a cap (`log_max`), as its head and a
// rotating tail, so a chatty job cannot fill the disk (review F18).
//
// On disk, for a log at PATH:
//   PATH               the head: the first cap/2 bytes
//   PATH.tail.<OFFSET> a tail chunk of at most cap/4 bytes, whose first byte is
//                      byte OFFSET of the stream; only the two newest are kept
// A logical offset counts every byte ever written, kept or dropped, so a reader
// that resumes from an offset (after a reconnect, a `ferry resume`) keeps working
// across rotation; bytes it missed read as one marker line saying how many.
// The writer belongs to one thread; readers may run in any process at any time
// (a chunk unlinked after a reader opened it still reads).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"

namespace ferry {

/// The default cap of one attempt's log, host and coordinator alike.
constexpr int64_t kDefaultLogMaxBytes = int64_t{1} << 30;

class CappedLogWriter {
 public:
  /// Continues the log at `path` (what is there stays: a resumed mirror).
  /// `max_bytes` >= 4; the files stay within it.
  static Result<CappedLogWriter> open(const std::string& path, int64_t max_bytes);

  /// Keeps what fits the head, rotates the rest through the tail.
  Status append(const char* data, size_t n);
  Status append(const std::string& s) { return append(s.data(), s.size()); }
  /// The source dropped `n` bytes here: the next byte appended is `n` further on.
  Status skip(int64_t n);
  /// The logical size: every byte written or skipped.
  int64_t size() const { return size_; }

 private:
  Status start_chunk(int64_t start);

  std::string path_;
  int64_t head_max_ = 0, chunk_max_ = 0;
  int64_t head_size_ = 0;
  std::vector<int64_t> chunks_;  // starts of the tail chunks on disk, oldest first
  int64_t chunk_size_ = 0;       // of the newest chunk
  UniqueFd fd_;                  // the file being appended to
  int64_t size_ = 0;
};

/// What one read of a capped log gives.
struct CappedLogRead {
  int64_t offset = 0;   // of bytes[0]: the offset asked for, or later when that was dropped
  int64_t dropped = 0;  // bytes dropped between the offset asked for and `offset`
  int64_t size = 0;     // the logical size now
  std::string bytes;
};

/// Up to `max` bytes from `offset` on. A log that does not exist reads as empty.
Result<CappedLogRead> read_capped_log(const std::string& path, int64_t offset, int64_t max);
/// The logical size (0 when there is no log).
int64_t capped_log_size(const std::string& path);
/// The line put where bytes were dropped.
std::string dropped_marker(int64_t n);
/// The last `lines` lines of what is kept, a marker where bytes were dropped;
/// reads backwards from the end, so a big log costs only what is printed.
/// `end`, when given, is set to the offset the lines end at (to follow on from).
Result<std::string> capped_log_tail(const std::string& path, int lines, int64_t* end = nullptr);

}  // namespace ferry
