#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>

#include "base/beneath.h"
#include "base/unique_fd.h"

namespace ferry {

namespace {

// All of `data` to `fd`, through short writes and EINTR; errno on failure.
bool write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  return read_file_at(AT_FDCWD, path, path, max_bytes);
}

Result<std::string> read_file_at(int dir, const std::string& name, const std::string& path, size_t max_bytes) {
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return errno_status("open " + path, errno);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_status("read " + path, errno);
    }
    if (n == 0) break;
    if (static_cast<size_t>(n) > max_bytes - out.size()) {
      return invalid_argument(path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status write_file_atomic(const std::string& path, const std::string& data, int mode, bool durable) {
  const std::string folder = dirname_of(path);
  UniqueFd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.ok()) return errno_status("open folder " + folder, errno);
  return write_file_atomic_at(dir.get(), basename_of(path), path, data, mode, durable);
}

Status write_file_atomic_at(int dir, const std::string& name, const std::string& path, const std::string& data,
                            int mode, bool durable) {
  // A fresh name nobody could have planted a symlink at (shared, group-writable
  // folders): random, created exclusively, never followed.
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
  const std::string ext = ".tmp." + std::to_string(::getpid()) + "." + suffix;
  const std::string tmp_name = name + ext, tmp = path + ext;
  UniqueFd fd(::openat(dir, tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.ok()) return errno_status("create " + tmp, errno);
  auto give_up = [&](const std::string& what) {
    int err = errno;
    fd.reset();
    ::unlinkat(dir, tmp_name.c_str(), 0);
    return errno_status(what + " " + tmp, err);
  };
  if (!write_all(fd.get(), data)) return give_up("write");
  if (durable && ::fsync(fd.get()) != 0) return give_up("fsync");
  fd.reset();
  if (::renameat(dir, tmp_name.c_str(), dir, name.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir, tmp_name.c_str(), 0);
    return errno_status("rename " + tmp, err);
  }
  if (durable) ::fsync(dir);
  return Status();
}

Status append_file(const std::string& path, const std::string& data, int mode) {
  return append_file_at(AT_FDCWD, path, path, data, mode);
}

Status append_file_at(int dir, const std::string& name, const std::string& path, const std::string& data, int mode) {
  UniqueFd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.ok()) return errno_status("open " + path, errno);
  if (!write_all(fd.get(), data)) return errno_status("write " + path, errno);
  return Status();
}

Status make_dirs(const std::string& path) {
  if (path.empty()) return Status();
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return errno_status("mkdir " + partial, errno);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return invalid_argument(path + " is not a directory");
  return Status();
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string dirname_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string join_path(const std::string& a, const std::string& b) {
  if (b.empty()) return a;
  if (b[0] == '/' || a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

bool has_dotdot_component(const std::string& path) {
  for (size_t pos = 0; pos <= path.size();) {
    size_t end = std::min(path.find('/', pos), path.size());
    if (path.compare(pos, end - pos, "..") == 0) return true;
    pos = end + 1;
  }
  return false;
}

Result<std::string> resolve_data_path(const std::string& workdir, const std::string& path) {
  if (path.empty()) return invalid_argument("empty path");
  // A relative path stays inside the workdir; an absolute one was named on purpose.
  if (path[0] != '/' && has_dotdot_component(path)) return invalid_argument("path '" + path + "' escapes the workdir");
  // Nor does it pass through a symlink there (review F26): `models -> /shared/models`.
  if (path[0] != '/') FERRY_RETURN_IF_ERROR(check_no_symlink_beneath(workdir, path));
  return join_path(workdir, path);
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string companion_path(const std::string& name) {
  std::string exe = self_exe();
  if (exe.empty()) return name;
  std::string dir = dirname_of(exe);
  std::string beside = dir + "/" + name;
  if (::access(beside.c_str(), F_OK) == 0) return beside;
  std::string installed = dirname_of(dir) + "/lib/ferry/" + name;
  if (::access(installed.c_str(), F_OK) == 0) return installed;
  return beside;
}

}  // namespace ferry
