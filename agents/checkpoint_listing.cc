#include "agents/checkpoint_listing.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "transfer/chunk_files.h"

namespace ferry {

namespace {

// The names in `dir` (sorted; "." and ".." left out); ENOENT when it is gone.
Result<std::vector<std::string>> names_in(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return errno_status("open folder " + dir, errno);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Adds the regular files under root/rel (`levels` deep) to `files`, at most `room`
// entries. Returns false when it stopped for room.
bool add_files(const std::string& root, const std::string& rel, int levels, size_t room, nlohmann::json& files) {
  auto names = names_in(rel.empty() ? root : root + "/" + rel);
  if (!names.ok()) return true;  // gone meanwhile: it has nothing left to list
  for (const auto& n : *names) {
    if (!is_utf8(n)) continue;  // the copy would refuse it; the watch does not see it
    std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::lstat((root + "/" + r).c_str(), &st) != 0) continue;  // vanished meanwhile
    const bool dir = S_ISDIR(st.st_mode);
    if (!dir && !S_ISREG(st.st_mode)) continue;  // symlinks, sockets, FIFOs
    if (files.size() >= room) return false;
    if (dir && levels > 1) {
      if (!add_files(root, r, levels - 1, room, files)) return false;
      continue;
    }
    files.push_back({{"path", dir ? r + "/" : r},
                     {"size", dir ? int64_t{-1} : static_cast<int64_t>(st.st_size)},
                     {"mtime_ns", file_mtime_ns(st)}});
  }
  return true;
}

}  // namespace

Result<nlohmann::json> list_checkpoints(const std::string& path, const std::string& pattern, const std::string& after,
                                        int64_t max_entries) {
  max_entries = std::clamp<int64_t>(max_entries, 1, kMaxScanPageEntries);
  auto names = names_in(path);
  if (!names.ok()) return names.status();
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  nlohmann::json folders = nlohmann::json::array();
  std::string next;
  int64_t entries = 0;
  for (const auto& n : *names) {
    if (!after.empty() && n <= after) continue;
    if (!is_utf8(n) || ::fnmatch(pattern.c_str(), n.c_str(), FNM_PERIOD) != 0) continue;
    struct stat st;
    if (::lstat((path + "/" + n).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;  // a link to one is skipped
    if (entries >= max_entries) {  // this page is full; the next starts after the last folder in it
      next = folders.back()["name"];
      break;
    }
    nlohmann::json files = nlohmann::json::array();
    const bool whole = add_files(path + "/" + n, "", 2, static_cast<size_t>(max_entries), files);
    entries += 1 + static_cast<int64_t>(files.size());
    nlohmann::json f = {{"name", n}, {"mtime_ns", file_mtime_ns(st)}, {"files", std::move(files)}};
    if (!whole) f["truncated"] = true;
    folders.push_back(std::move(f));
  }
  return nlohmann::json{{"now_ns", int64_t{now.tv_sec} * 1000000000 + now.tv_nsec},
                        {"folders", std::move(folders)},
                        {"next", next}};
}

}  // namespace ferry
