#include "transfer/copied_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <utility>

#include "base/file_util.h"
#include "base/unique_fd.h"
#include "transfer/chunk_files.h"
#include "transfer/copy_plan.h"

namespace ferry {
namespace {

constexpr char kRecordHeader[] = "ferry-files 1\n";

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string::npos) end = path.size();
    if (end > pos) parts.push_back(path.substr(pos, end - pos));
    pos = end + 1;
  }
  return parts;
}

// "/a/./b/" -> "/a/b": lexical only (a symlink is not resolved, on purpose: the
// check is about what the workflow named).
std::string lexical(const std::string& path) {
  std::string out;
  for (const auto& p : split_path(path)) {
    if (p != ".") out += (out.empty() && path[0] != '/' ? "" : "/") + p;
  }
  if (out.empty()) return path.empty() || path[0] != '/' ? "." : "/";
  return out;
}

std::string home_dir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "";
}

// A recorded path ferry may remove: inside the copy, and never in a `.ferry` folder.
bool removable_rel(const std::string& rel) {
  if (!check_copy_rel(rel).ok()) return false;
  for (const auto& p : split_path(rel)) {
    if (p == ".ferry") return false;
  }
  return true;
}

Result<std::vector<std::string>> read_record(const DestFolder& dir, bool* present) {
  std::string path = dir.shown(kCopiedFilesName);
  *present = false;
  struct stat st;
  if (::fstatat(dir.fd.get(), kCopiedFilesName, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::vector<std::string>{};
    return errno_status("stat " + path, errno);
  }
  if (!S_ISREG(st.st_mode)) return invalid_argument(path + " is not a regular file");
  auto text = read_file_at(dir.fd.get(), kCopiedFilesName, path);
  if (!text.ok()) return text.status();
  const std::string header = kRecordHeader;
  if (text->compare(0, header.size(), header) != 0) {
    return invalid_argument(path + " is not a ferry record of copied files");
  }
  *present = true;
  return decode_keep_list(text->substr(header.size()));
}

Status write_record(const DestFolder& dir, const std::set<std::string>& files) {
  std::string body = kRecordHeader;
  for (const auto& f : files) append_keep_entry(&body, f);
  return write_file_atomic_at(dir.fd.get(), kCopiedFilesName, dir.shown(kCopiedFilesName), body, 0644,
                              /*durable=*/true);
}

// Removes root/rel when it is a regular file reached without following a symlink
// anywhere on the way; anything else stays (and is named as left by the caller).
Status unlink_beneath(int root, const std::string& rel, bool* removed) {
  *removed = false;
  auto parts = split_path(rel);
  UniqueFd cur(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  if (!cur.ok()) return errno_status("dup", errno);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int fd = ::openat(cur.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) return Status();  // gone, or a symlink
      return errno_status("open " + rel, errno);
    }
    cur.reset(fd);
  }
  struct stat st;
  if (::fstatat(cur.get(), parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Status();
    return errno_status("stat " + rel, errno);
  }
  if (!S_ISREG(st.st_mode)) return Status();
  if (::unlinkat(cur.get(), parts.back().c_str(), 0) != 0) return errno_status("remove stale " + rel, errno);
  *removed = true;
  return Status();
}

// Names the files under `root` that `keep` lacks (symlinks among them): never
// through a symlink, never inside `.ferry`, ferry's own bookkeeping passed over.
Status name_left(int root, const std::set<std::string>& keep, PruneReport* report) {
  std::vector<std::pair<UniqueFd, std::string>> todo;
  todo.emplace_back(UniqueFd(::fcntl(root, F_DUPFD_CLOEXEC, 0)), "");
  while (!todo.empty()) {
    auto [fd, rel] = std::move(todo.back());
    todo.pop_back();
    if (!fd.ok()) return errno_status("open folder " + (rel.empty() ? std::string(".") : rel), errno);
    DIR* d = ::fdopendir(fd.get());
    if (!d) return errno_status("read folder " + rel, errno);
    int dfd = fd.release();
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      std::string r = rel.empty() ? n : rel + "/" + n;
      if (n == ".ferry" || is_copy_bookkeeping(n)) continue;
      struct stat st;
      if (::fstatat(dfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
      int sub = S_ISDIR(st.st_mode) ? ::openat(dfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
      if (sub >= 0) {
        todo.emplace_back(UniqueFd(sub), r);
      } else if (!keep.count(r)) {  // a file, a link, or a folder it cannot read: named as it is
        if (report->left.size() < kMaxPruneNamed) report->left.push_back(r);
        ++report->left_count;
      }
    }
    ::closedir(d);
  }
  std::sort(report->left.begin(), report->left.end());
  return Status();
}

}  // namespace

nlohmann::json prune_report_json(const PruneReport& r) {
  return {{"removed", r.removed},
          {"removed_count", r.removed_count},
          {"left", r.left},
          {"left_count", r.left_count},
          {"not_pruned", r.not_pruned}};
}

PruneReport prune_report_from_json(const nlohmann::json& j) {
  PruneReport r;
  if (!j.is_object()) return r;
  auto names = [&](const char* key, std::vector<std::string>* out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) return;
    for (const auto& n : *it) {
      if (n.is_string() && out->size() < kMaxPruneNamed) out->push_back(n.get<std::string>());
    }
  };
  auto count = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number_integer() ? std::max<int64_t>(0, it->get<int64_t>()) : 0;
  };
  names("removed", &r.removed);
  names("left", &r.left);
  r.removed_count = std::max<int64_t>(count("removed_count"), static_cast<int64_t>(r.removed.size()));
  r.left_count = std::max<int64_t>(count("left_count"), static_cast<int64_t>(r.left.size()));
  auto why = j.find("not_pruned");
  if (why != j.end() && why->is_string()) r.not_pruned = why->get<std::string>();
  return r;
}

std::vector<std::string> prune_report_lines(const std::string& where, const PruneReport& r) {
  auto list = [](const std::vector<std::string>& names, int64_t count) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return count > static_cast<int64_t>(names.size()) ? out + ", …" : out;
  };
  std::vector<std::string> lines;
  if (r.removed_count > 0) {
    lines.push_back(
        "removed " + std::to_string(r.removed_count) + " file(s) from " + where +
        " that an earlier ferry copy wrote and the source no longer has: " + list(r.removed, r.removed_count));
  }
  if (r.left_count > 0) {
    lines.push_back("left " + std::to_string(r.left_count) + " file(s) in " + where +
                    " that this copy did not bring (not removed): " + list(r.left, r.left_count));
  }
  if (!r.not_pruned.empty() && r.left_count > 0) lines.push_back(r.not_pruned);
  return lines;
}

Status check_folder_copy_root(const std::string& dir, const std::string& workdir) {
  if (dir.empty()) return invalid_argument("a folder copy needs a destination folder");
  if (has_dotdot_component(dir)) return invalid_argument("the folder '" + dir + "' has a '..' component");
  std::string d = lexical(dir);
  auto own_folder = [&](const std::string& what) {
    return invalid_argument("'" + dir + "' is " + what +
                            ": a folder copy needs a folder of its own (name a subfolder)");
  };
  if (d == "/") return own_folder("the root folder");
  std::string home = home_dir();
  if (!home.empty() && d == lexical(home)) return own_folder("the home folder");
  if (!workdir.empty() && (d == "." || d == lexical(workdir))) return own_folder("the host's workdir");
  return Status();
}

Status record_copied_files(const DestFolder& dir, const std::vector<std::string>& incoming) {
  bool present = false;
  auto old = read_record(dir, &present);
  if (!old.ok()) return old.status();
  std::set<std::string> all(old->begin(), old->end());
  size_t before = all.size();
  for (const auto& f : incoming) {
    if (removable_rel(f)) all.insert(f);
  }
  if (present && all.size() == before) return Status();  // nothing new: no rewrite
  return write_record(dir, all);
}

Status prune_copied_files(const DestFolder& dir, const std::vector<std::string>& keep, PruneReport* report) {
  *report = PruneReport();
  std::set<std::string> kept(keep.begin(), keep.end());
  // A destination that is itself a symlink is written through (the user named
  // it) but never pruned (it may be a team's shared folder).
  if (dir.symlink) {
    report->not_pruned = dir.path + " is a symlink: nothing in it is removed";
    return write_record(dir, kept);
  }
  const int root = dir.fd.get();
  bool present = false;
  auto recorded_list = read_record(dir, &present);
  if (!recorded_list.ok()) {
    report->not_pruned = recorded_list.status().message() + ": nothing in it is removed";
    recorded_list = std::vector<std::string>{};
  } else if (!present) {
    report->not_pruned = "no earlier ferry copy is recorded in " + dir.path + ": nothing in it is removed";
  }
  for (const auto& r : *recorded_list) {
    if (!removable_rel(r) || kept.count(r)) continue;
    bool removed = false;
    FERRY_RETURN_IF_ERROR(unlink_beneath(root, r, &removed));
    if (removed) {
      if (report->removed.size() < kMaxPruneNamed) report->removed.push_back(r);
      ++report->removed_count;
    }
  }
  // What is still there and not the copy's (a recorded file behind a symlink too).
  FERRY_RETURN_IF_ERROR(name_left(root, kept, report));
  return write_record(dir, kept);
}

}  // namespace ferry
