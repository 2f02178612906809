#include "transfer/dest_folder.h"

#include <fcntl.h>

#include <cerrno>

#include "base/beneath.h"
#include "base/file_util.h"

namespace ferry {
namespace {

// The folder `folder`: `path` itself, or with `parent` the folder that holds it.
Result<DestFolder> open_folder(const std::string& workdir, const std::string& path, const std::string& folder,
                               bool create, bool parent) {
  DestFolder dir;
  dir.path = join_path(workdir, folder);
  if (!workdir.empty() && (path.empty() || path[0] != '/')) {
    auto fd = open_dir_beneath(workdir, path, create, parent);  // its errors name `path`
    if (!fd.ok()) return fd.status();
    dir.fd = std::move(fd).value();
    return dir;
  }
  const std::string named = folder.empty() ? "." : folder;
  if (create) FERRY_RETURN_IF_ERROR(make_dirs(named));
  dir.fd.reset(::open(named.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.fd.ok() && (errno == ELOOP || errno == ENOTDIR)) {
    dir.fd.reset(::open(named.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    dir.symlink = dir.fd.ok();
  }
  if (!dir.fd.ok()) return errno_status("open folder " + named, errno);
  return dir;
}

}  // namespace

std::string DestFolder::shown(const std::string& name) const {
  if (path.empty()) return name;
  return path.back() == '/' ? path + name : path + "/" + name;
}

Result<DestFolder> open_dest_folder(const std::string& workdir, const std::string& path, bool create) {
  return open_folder(workdir, path, path, create, /*parent=*/false);
}

Result<DestFolder> open_dest_parent(const std::string& workdir, const std::string& path, bool create,
                                    std::string* name) {
  *name = basename_of(path);
  if (name->empty() || *name == "." || *name == "..") return invalid_argument("'" + path + "' names no file");
  const size_t slash = path.rfind('/');
  // "/x" lies in "/"; "x" in the workdir itself.
  const std::string folder = slash == std::string::npos ? "" : slash == 0 ? "/" : path.substr(0, slash);
  return open_folder(workdir, path, folder, create, /*parent=*/true);
}

}  // namespace ferry
