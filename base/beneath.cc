#include "base/beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace ferry {
namespace {

constexpr int kOpenat2Retries = 8;  // EAGAIN: a rename raced the lookup; it is asked again

// The components of a relative path ("a//./b" -> a, b).
std::vector<std::string> components(const std::string& rel) {
  std::vector<std::string> parts;
  for (size_t pos = 0; pos <= rel.size();) {
    size_t end = rel.find('/', pos);
    if (end == std::string::npos) end = rel.size();
    std::string p = rel.substr(pos, end - pos);
    if (!p.empty() && p != ".") parts.push_back(std::move(p));
    pos = end + 1;
  }
  return parts;
}

Status through_symlink(const std::string& root, const std::string& rel, const std::string& link) {
  return invalid_argument("the path '" + rel + "' passes through a symlink ('" + link + "' in " + root +
                          "): ferry does not follow symlinks beneath the workdir; name the real folder by its "
                          "absolute path instead");
}

Status check_rel(const std::string& rel) {
  if (!rel.empty() && rel[0] == '/') return invalid_argument("'" + rel + "' is not a relative path");
  for (const auto& p : components(rel)) {
    if (p == "..") return invalid_argument("path '" + rel + "' escapes the workdir");
  }
  return Status();
}

Result<UniqueFd> open_root(const std::string& root) {
  UniqueFd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd.ok()) return errno_status("open folder " + root, errno);
  return fd;
}

// Whether `name` in `dir` is a symlink (so an open that failed is explained by it).
bool is_symlink_at(int dir, const std::string& name) {
  struct stat st;
  return ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

// The folders parts[0, n) beneath `root`, each opened with O_NOFOLLOW relative to
// the one before (and with `create` made first when missing); the last with `flags`.
Result<UniqueFd> walk_dirs(int root_fd, const std::string& root, const std::string& rel,
                           const std::vector<std::string>& parts, size_t n, int flags, bool create) {
  // The walk starts from the folder already open, never from its name again.
  UniqueFd start(::openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!start.ok()) return errno_status("open folder " + root, errno);
  Result<UniqueFd> cur = std::move(start);
  std::string so_far;
  for (size_t i = 0; i < n; ++i) {
    so_far += (so_far.empty() ? "" : "/") + parts[i];
    const char* name = parts[i].c_str();
    const int how = (i + 1 == n ? flags : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::openat(cur->get(), name, how);
    if (fd < 0 && errno == ENOENT && create) {
      // EEXIST: another copy made it meanwhile; the open below checks what it is.
      if (::mkdirat(cur->get(), name, 0755) != 0 && errno != EEXIST) {
        return errno_status("mkdir " + root + "/" + so_far, errno);
      }
      fd = ::openat(cur->get(), name, how);
    }
    if (fd < 0) {
      int err = errno;
      if (is_symlink_at(cur->get(), parts[i])) return through_symlink(root, rel, so_far);
      return errno_status("open " + root + "/" + rel, err);
    }
    cur->reset(fd);
  }
  if (n == 0 && flags != O_PATH) {
    UniqueFd fd(::openat(cur->get(), ".", flags | O_DIRECTORY | O_CLOEXEC));
    if (!fd.ok()) return errno_status("open folder " + root, errno);
    return fd;
  }
  return cur;
}

// The fallback: each folder opened with O_NOFOLLOW relative to the one before it.
Result<UniqueFd> walk_beneath(int root_fd, const std::string& root, const std::string& rel, int flags, int mode) {
  const auto parts = components(rel);
  auto cur = walk_dirs(root_fd, root, rel, parts, parts.empty() ? 0 : parts.size() - 1, O_PATH, /*create=*/false);
  if (!cur.ok()) return cur.status();
  const std::string last = parts.empty() ? "." : parts.back();
  UniqueFd fd(::openat(cur->get(), last.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.ok()) {
    int err = errno;
    if (is_symlink_at(cur->get(), last)) return through_symlink(root, rel, rel);
    return errno_status("open " + root + "/" + rel, err);
  }
  struct stat st;
  // O_PATH | O_NOFOLLOW opens a symlink itself rather than failing.
  if (::fstat(fd.get(), &st) == 0 && S_ISLNK(st.st_mode)) return through_symlink(root, rel, rel);
  return fd;
}

}  // namespace

Result<UniqueFd> open_beneath(const std::string& root, const std::string& rel, int flags, int mode, bool openat2) {
  auto dir = open_root(root);
  if (!dir.ok()) return dir.status();
  return open_beneath_at(dir->get(), root, rel, flags, mode, openat2);
}

Result<UniqueFd> open_beneath_at(int root_fd, const std::string& root, const std::string& rel, int flags, int mode,
                                 bool openat2) {
  FERRY_RETURN_IF_ERROR(check_rel(rel));
  if (!openat2) return walk_beneath(root_fd, root, rel, flags, mode);
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? static_cast<uint64_t>(mode) : 0;  // else EINVAL
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
  const std::string path = rel.empty() ? "." : rel;
  for (int tries = 0; tries < kOpenat2Retries; ++tries) {
    long fd = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno == EAGAIN || errno == EINTR) continue;
    // A kernel before 5.6, or a sandbox that filters the call: the walk does the same.
    if (errno == ENOSYS || errno == EPERM) break;
    // The walk names the link (and, should the link be gone by now, opens what is there).
    if (errno == ELOOP || errno == EXDEV) return walk_beneath(root_fd, root, rel, flags, mode);
    return errno_status("open " + root + "/" + rel, errno);
  }
  return walk_beneath(root_fd, root, rel, flags, mode);
}

Result<UniqueFd> open_dir_beneath(const std::string& root, const std::string& rel, bool create, bool parent) {
  FERRY_RETURN_IF_ERROR(check_rel(rel));
  const auto parts = components(rel);
  const size_t n = parent && !parts.empty() ? parts.size() - 1 : parts.size();
  auto dir = open_root(root);
  if (!dir.ok()) return dir.status();
  return walk_dirs(dir->get(), root, rel, parts, n, O_RDONLY, create);
}

Result<UniqueFd> open_data_path(const std::string& workdir, const std::string& path, int flags, int mode) {
  if (!path.empty() && path[0] == '/') {
    UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC, mode));
    if (!fd.ok()) return errno_status("open " + path, errno);
    return fd;
  }
  return open_beneath(workdir, path, flags, mode);
}

Status check_no_symlink_beneath(const std::string& root, const std::string& rel) {
  FERRY_RETURN_IF_ERROR(check_rel(rel));
  auto cur = open_root(root);
  if (!cur.ok()) return cur.status();
  std::string so_far;
  for (const auto& p : components(rel)) {
    so_far += (so_far.empty() ? "" : "/") + p;
    struct stat st;
    if (::fstatat(cur->get(), p.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Status();  // not there (yet)
    if (S_ISLNK(st.st_mode)) return through_symlink(root, rel, so_far);
    if (!S_ISDIR(st.st_mode)) return Status();  // a file: what comes after it cannot exist
    int fd = ::openat(cur->get(), p.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return is_symlink_at(cur->get(), p) ? through_symlink(root, rel, so_far) : Status();  // swapped
    cur->reset(fd);
  }
  return Status();
}

}  // namespace ferry
