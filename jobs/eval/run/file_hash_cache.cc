#include "jobs/eval/run/file_hash_cache.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>

#include <nlohmann/json.hpp>

#include "base/file_hash.h"
#include "base/file_util.h"
#include "base/json_field_writer.h"
#include "base/json_fields.h"

namespace ferry::eval {
namespace {

// A model folder has tens of files; a store serves a few targets and references.
constexpr size_t kMaxCacheBytes = size_t{4} << 20;
constexpr size_t kMaxEntries = 10000;

// An entry's fields, read and written through one list (base/json_fields.h).
constexpr auto entry_fields = [](auto& v, auto& e) {
  v("size", e.size);
  v("mtime_ns", e.mtime_ns);
  v("ctime_ns", e.ctime_ns);
  v("inode", e.inode);
  v("device", e.device);
  v("xxh128", e.xxh128);
};

int64_t nanoseconds(const timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

}  // namespace

FileHashCache::FileHashCache(std::string file, double racy_seconds)
    : file_(std::move(file)),
      racy_seconds_(racy_seconds) {
  if (file_.empty() || !path_exists(file_)) return;
  auto text = read_file(file_, kMaxCacheBytes);
  if (!text.ok()) return;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j["files"].is_object()) return;
  for (const auto& [path, e] : j["files"].items()) {
    if (!e.is_object() || entries_.size() >= kMaxEntries) continue;
    auto entry = fields_from_json<Entry>(e, "file-hashes.json", entry_fields);
    if (!entry.ok() || entry->xxh128.empty()) continue;  // a mistyped entry is hashed again
    entries_[path] = *entry;
  }
}

Result<std::string> FileHashCache::xxh128(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno_status("cannot stat " + path, errno);
  Entry now;
  now.size = st.st_size;
  now.mtime_ns = nanoseconds(st.st_mtim);
  now.ctime_ns = nanoseconds(st.st_ctim);
  now.inode = st.st_ino;
  now.device = st.st_dev;
  auto it = entries_.find(path);
  if (it != entries_.end() && it->second.size == now.size && it->second.mtime_ns == now.mtime_ns &&
      it->second.ctime_ns == now.ctime_ns && it->second.inode == now.inode && it->second.device == now.device) {
    ++reused_;
    return it->second.xxh128;
  }
  timespec started{};
  clock_gettime(CLOCK_REALTIME, &started);
  auto hash = xxh128_file_hex(path);
  if (!hash.ok()) return hash.status();
  // Stat again: a file written while it was read is not remembered (next time it is hashed anew).
  struct stat after {};
  ++hashed_;
  const bool racy =
      static_cast<double>(nanoseconds(started) - std::max(now.ctime_ns, now.mtime_ns)) < racy_seconds_ * 1e9;
  if (!racy && ::stat(path.c_str(), &after) == 0 && nanoseconds(after.st_ctim) == now.ctime_ns &&
      after.st_size == now.size && (entries_.count(path) > 0 || entries_.size() < kMaxEntries)) {
    now.xxh128 = *hash;
    entries_[path] = now;
  }
  return hash;
}

Status FileHashCache::save() const {
  if (file_.empty() || hashed_ == 0) return Status();
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [path, e] : entries_) {
    files[path] = fields_json(e, entry_fields);
  }
  FERRY_RETURN_IF_ERROR(make_dirs(dirname_of(file_)));  // the store's first eval: before its runs are written
  return write_file_atomic(file_, nlohmann::json{{"version", 1}, {"files", files}}.dump(), 0644, false);
}

}  // namespace ferry::eval
