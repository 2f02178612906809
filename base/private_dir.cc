#include "base/private_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/file_util.h"

namespace ferry {
namespace {

std::string octal(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

}  // namespace

Status check_not_shared_dir(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? Status() : errno_status("stat " + path, errno);
  if (!S_ISDIR(st.st_mode)) return permission_denied(path + " is not a folder");
  if (st.st_uid != ::geteuid()) {
    return permission_denied(path + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
                             std::to_string(::geteuid()) +
                             "): its owner could replace the agent ferry runs there; use a workdir of your own");
  }
  if ((st.st_mode & 022) != 0) {
    return permission_denied(path + " is writable by group or others (mode " + octal(st.st_mode) +
                             "): they could replace the agent ferry runs there; run `chmod go-w " + path + "`");
  }
  return Status();
}

Status check_agent_dirs(const std::string& workdir) {
  for (const std::string& d : {workdir, workdir + "/.ferry", workdir + "/.ferry/bin"}) {
    FERRY_RETURN_IF_ERROR(check_not_shared_dir(d));
  }
  return Status();
}

Status make_owner_only_dir(const std::string& path) {
  FERRY_RETURN_IF_ERROR(make_dirs(dirname_of(path)));
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return errno_status("mkdir " + path, errno);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno_status("lstat " + path, errno);
  if (!S_ISDIR(st.st_mode)) return permission_denied(path + " is not a folder (a symlink or a file is there)");
  if (st.st_uid != ::geteuid()) {
    return permission_denied(path + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
                             std::to_string(::geteuid()) + ")");
  }
  // mkdir applies the umask; 0700 is never widened by it, only narrowed.
  if ((st.st_mode & 07777) != 0700) {
    return permission_denied(path + " has mode " + octal(st.st_mode) +
                             ", not 0700: others may have placed a socket there; remove the folder");
  }
  return Status();
}

}  // namespace ferry
