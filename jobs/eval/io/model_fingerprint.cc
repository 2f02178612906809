#include "jobs/eval/io/model_fingerprint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "base/file_hash.h"
#include "base/file_util.h"
#include "base/unique_fd.h"
#include "transfer/copy_bookkeeping.h"

namespace ferry::eval {
namespace {

// XXH3-128 fed in pieces; one file's summary or the folder's whole.
class Hasher {
 public:
  Hasher() : st_(XXH3_createState()) { XXH3_128bits_reset(st_); }
  ~Hasher() { XXH3_freeState(st_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void add(const void* data, size_t n) { XXH3_128bits_update(st_, data, n); }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }  // with its NUL: fields stay apart
  std::string hex() const { return xxh128_canonical_hex(XXH3_128bits_digest(st_)); }

 private:
  XXH3_state_t* st_;
};

// Feeds `len` bytes of `fd` from `offset` to `h`; an error naming `shown` when the file
// ends early (it shrank while read) or cannot be read.
Status add_range(int fd, int64_t offset, int64_t len, const std::string& shown, Hasher* h) {
  std::string buf(static_cast<size_t>(std::min<int64_t>(len, int64_t{1} << 20)), '\0');
  while (len > 0) {
    const ssize_t got = ::pread(fd, &buf[0], static_cast<size_t>(std::min<int64_t>(len, buf.size())), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno_status("cannot read " + shown, errno);
    if (got == 0) return data_loss(shown + " ended early (was it rewritten while read?)");
    h->add(buf.data(), static_cast<size_t>(got));
    offset += got;
    len -= got;
  }
  return Status();
}

// kSampleBlocks blocks of kSampleBytes spread evenly over [begin, end), the first at
// begin and the last ending at end; all of it when that is no more.
Status add_samples(int fd, int64_t begin, int64_t end, const std::string& shown, Hasher* h) {
  const int64_t span = end - begin;
  if (span <= kSampleBlocks * kSampleBytes) return add_range(fd, begin, span, shown, h);
  for (int i = 0; i < kSampleBlocks; ++i) {
    const int64_t at = begin + (span - kSampleBytes) / (kSampleBlocks - 1) * i;
    FERRY_RETURN_IF_ERROR(add_range(fd, i == kSampleBlocks - 1 ? end - kSampleBytes : at, kSampleBytes, shown, h));
  }
  return Status();
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The header length a .safetensors file of `size` bytes declares in its first 8 bytes
// (little-endian), or -1 when it has none that fits (the loader names such a file).
int64_t safetensors_header_bytes(int fd, int64_t size) {
  unsigned char n[8];
  if (size < 8 || ::pread(fd, n, 8, 0) != 8) return -1;
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | n[i];
  if (len > static_cast<uint64_t>(kWholeFileBytes) || len > static_cast<uint64_t>(size - 8)) return -1;
  return static_cast<int64_t>(len);
}

// One file: "size", then its content as the header comment says.
Status add_file(const std::string& path, const std::string& name, Hasher* folder) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return errno_status("cannot open " + path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return errno_status("cannot stat " + path, errno);
  const int64_t size = st.st_size;
  Hasher content;
  if (size <= kWholeFileBytes) {
    FERRY_RETURN_IF_ERROR(add_range(fd.get(), 0, size, path, &content));
  } else if (const int64_t header = ends_with(name, ".safetensors") ? safetensors_header_bytes(fd.get(), size) : -1;
             header >= 0) {
    FERRY_RETURN_IF_ERROR(add_range(fd.get(), 0, 8 + header, path, &content));
    FERRY_RETURN_IF_ERROR(add_samples(fd.get(), 8 + header, size, path, &content));
  } else {
    FERRY_RETURN_IF_ERROR(add_samples(fd.get(), 0, size, path, &content));
  }
  folder->add(std::to_string(size));
  folder->add(content.hex());
  return Status();
}

}  // namespace

Result<std::vector<std::string>> model_folder_files(const std::string& folder) {
  DIR* d = ::opendir(folder.c_str());
  if (d == nullptr) return errno_status("cannot list " + folder, errno);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    struct stat st;
    if (name != "." && name != ".." && ::stat(join_path(folder, name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      names.push_back(name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> model_fingerprint(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno_status("cannot stat " + path, errno);
  Hasher h;
  if (!S_ISDIR(st.st_mode)) {
    FERRY_RETURN_IF_ERROR(add_file(path, path, &h));
    return h.hex();
  }
  auto names = model_folder_files(path);
  if (!names.ok()) return names.status();
  for (const auto& name : *names) {
    if (is_copy_bookkeeping(name)) continue;
    h.add(name);
    FERRY_RETURN_IF_ERROR(add_file(join_path(path, name), name, &h));
  }
  return h.hex();
}

std::string copy_manifest_hash(const std::string& folder) {
  auto text = read_file(join_path(folder, kCompleteMarker), 64);
  if (!text.ok()) return "";
  std::string hash = *text;
  while (!hash.empty() && std::isspace(static_cast<unsigned char>(hash.back()))) hash.pop_back();
  const bool hex = hash.size() == 32 && std::all_of(hash.begin(), hash.end(), [](char c) {
                     return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
                   });
  return hex ? hash : "";
}

}  // namespace ferry::eval
