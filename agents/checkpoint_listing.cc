#include "agents/checkpoint_listing.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "base/beneath.h"
#include "base/unique_fd.h"
#include "transfer/chunk_files.h"

namespace ferry {

namespace {

// The names in the folder open at `dir` (sorted; "." and ".." left out); read
// through a descriptor of its own, so `dir` stays open and unmoved.
Result<std::vector<std::string>> names_in(int dir) {
  DIR* d = ::fdopendir(::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) return errno_status("read folder", errno);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// The folder `name` in `dir`, never through a symlink; not ok when it is gone or
// was swapped for a link meanwhile.
UniqueFd open_sub(int dir, const std::string& name) {
  return UniqueFd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// Adds the regular files under the folder open at `dir` (`rel` in the listing,
// `levels` deep) to `files`, at most `room` entries. Returns false when it stopped for room.
bool add_files(int dir, const std::string& rel, int levels, size_t room, std::vector<protocol::ScannedFile>& files) {
  auto names = names_in(dir);
  if (!names.ok()) return true;  // gone meanwhile: it has nothing left to list
  for (const auto& n : *names) {
    if (!is_utf8(n)) continue;  // the copy would refuse it; the watch does not see it
    std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // vanished meanwhile
    const bool is_dir = S_ISDIR(st.st_mode);
    if (!is_dir && !S_ISREG(st.st_mode)) continue;  // symlinks, sockets, FIFOs
    if (files.size() >= room) return false;
    if (is_dir && levels > 1) {
      UniqueFd sub = open_sub(dir, n);
      if (sub.ok() && !add_files(sub.get(), r, levels - 1, room, files)) return false;
      continue;
    }
    files.push_back({is_dir ? r + "/" : r, is_dir ? int64_t{-1} : static_cast<int64_t>(st.st_size), file_mtime_ns(st)});
  }
  return true;
}

}  // namespace

Result<protocol::FsScanReply> list_checkpoints(const std::string& workdir, const std::string& path,
                                               const std::string& pattern, const std::string& after,
                                               int64_t max_entries) {
  max_entries = std::clamp<int64_t>(max_entries, 1, kMaxScanPageEntries);
  // Beneath the workdir like every other op (review-4 P10): a link on the way is refused by name.
  auto from = open_data_path(workdir, path, O_RDONLY | O_DIRECTORY);
  if (!from.ok()) return from.status();
  auto names = names_in(from->get());
  if (!names.ok()) return names.status().with_context(path);
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  protocol::FsScanReply reply;
  reply.now_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  auto& folders = reply.folders;
  int64_t entries = 0;
  for (const auto& n : *names) {
    if (!after.empty() && n <= after) continue;
    if (!is_utf8(n) || ::fnmatch(pattern.c_str(), n.c_str(), FNM_PERIOD) != 0) continue;
    struct stat st;
    // A link to a folder is skipped; so is a folder gone or swapped for one meanwhile.
    if (::fstatat(from->get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    UniqueFd sub = open_sub(from->get(), n);
    if (!sub.ok()) continue;
    if (entries >= max_entries) {  // this page is full; the next starts after the last folder in it
      reply.next = folders.back().name;
      break;
    }
    protocol::ScannedFolder f{n, file_mtime_ns(st), {}, false};
    f.truncated = !add_files(sub.get(), "", 2, static_cast<size_t>(max_entries), f.files);
    entries += 1 + static_cast<int64_t>(f.files.size());
    folders.push_back(std::move(f));
  }
  return reply;
}

}  // namespace ferry
