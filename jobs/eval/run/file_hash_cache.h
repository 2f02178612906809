// file_hash_cache: a file's XXH128 remembered with what identifies its bytes, so a
// watch hashes its unchanging target once, not per checkpoint (issue 43). The baseline
// store's key is a hash of every file of the target and reference (baseline_store.h):
// for the seed's 27B target that was about 54 GB read before each checkpoint's eval.
// An entry is reused only while the file's size, modification time, change time,
// inode and device are all as they were: a write through any path changes ctime,
// which no user can set back, so a rewritten file is hashed again. A file changed
// less than kRacySeconds before it was hashed is not remembered (git's "racily
// clean" entries): the kernel stamps times from a coarse clock, so a write in the
// same tick as the one hashed would leave every field as it was. The cache is a
// JSON file beside the stored runs, replaced whole; an unreadable one is an empty
// cache (it only saves time). Plain value; one thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"

namespace ferry::eval {

inline constexpr double kRacySeconds = 2;

class FileHashCache {
 public:
  /// The cache kept in `file`; "" keeps none (every file is hashed). `racy_seconds`:
  /// kRacySeconds but in tests.
  explicit FileHashCache(std::string file, double racy_seconds = kRacySeconds);

  /// The XXH128 of `path` (file_hash.h's hex), from the cache when the file is unchanged.
  Result<std::string> xxh128(const std::string& path);

  /// Writes the cache back when a file was hashed (and the cache has a file).
  Status save() const;

  int64_t files_hashed() const { return hashed_; }
  int64_t files_reused() const { return reused_; }

 private:
  struct Entry {
    int64_t size = 0, mtime_ns = 0, ctime_ns = 0;
    uint64_t inode = 0, device = 0;
    std::string xxh128;
  };
  std::string file_;
  double racy_seconds_;
  std::map<std::string, Entry> entries_;  // by the path as asked
  int64_t hashed_ = 0, reused_ = 0;
};

}  // namespace ferry::eval
