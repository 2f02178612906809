#include "transfer/chunk_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>

#include "base/clock.h"
#include "base/file_hash.h"
#include "base/file_lock.h"
#include "base/file_util.h"
#include "base/unique_fd.h"
#include "protocol/body_buffers.h"
#include "transfer/dest_folder.h"
#include "transfer/dest_lease.h"

namespace ferry {
namespace {

constexpr char kPart[] = ".ferry-part";
constexpr char kJournal[] = ".ferry-journal";
constexpr char kSpec[] = ".ferry-spec";

Status pread_all(int fd, char* buf, int64_t len, int64_t offset, const std::string& path) {
  int64_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, static_cast<size_t>(len - done), offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status("read " + path, errno);
    if (n == 0) return data_loss(path + " is shorter than expected (at byte " + std::to_string(offset + done) + ")");
    done += n;
  }
  return Status();
}

// Chunks are written in pieces of this size. The kernel sizes page-cache folios by
// the write: one 2 MiB pwrite takes 2 MiB folios from the buddy allocator's
// high-order (cold) memory, while ≤ 32 KiB writes take order ≤ 3 folios from the
// per-CPU lists of recently freed, warm pages. Measured on the testbed VM (kernel
// 6.18, ext4, 1 GiB into a fresh file after freeing 1 GiB): 2.9-3.5 s of CPU with
// 2 MiB writes, 0.26-0.32 s with 32 KiB ones (16 KiB 0.35-0.54, 64 KiB 0.4-1.6).
constexpr int64_t kWritePieceBytes = 32 * 1024;

Status pwrite_all(int fd, const char* buf, int64_t len, int64_t offset, const std::string& path) {
  int64_t done = 0;
  while (done < len) {
    size_t piece = static_cast<size_t>(std::min(len - done, kWritePieceBytes));
    ssize_t n = ::pwrite(fd, buf + done, piece, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (errno == ENOSPC) return failed_precondition("no space left on device writing " + path);
      return errno_status("write " + path, errno);
    }
    done += n;
  }
  return Status();
}

int64_t chunk_count(int64_t size, int64_t chunk_size) { return size == 0 ? 0 : (size + chunk_size - 1) / chunk_size; }

Result<std::map<int64_t, std::string>> hash_range(int fd, const std::string& path, int64_t size, int64_t chunk_size,
                                                  const std::vector<int64_t>& indices) {
  std::map<int64_t, std::string> out;
  std::string buf;
  for (int64_t i : indices) {
    // Checked before the multiplication: a peer's index must not overflow it (review F21).
    if (i < 0 || i >= chunk_count(size, chunk_size)) {
      return invalid_argument("chunk " + std::to_string(i) + " is past the end of " + path);
    }
    int64_t off = i * chunk_size;
    int64_t len = std::min(chunk_size, size - off);
    buf.resize(static_cast<size_t>(len));
    FERRY_RETURN_IF_ERROR(pread_all(fd, buf.data(), len, off, path));
    out[i] = xxh128_hex(buf.data(), buf.size());
  }
  return out;
}

// A listed file with its version (inode, mtime in ns): the copy checks the source
// still has it before it commits, so a file rewritten meanwhile is never passed
// off as verified.
protocol::ListedFile listing_entry(const std::string& rel, const struct stat& st) {
  return {rel, static_cast<int64_t>(st.st_size), static_cast<int>(st.st_mode & 0777), file_mtime_ns(st),
          static_cast<int64_t>(st.st_ino)};
}

}  // namespace

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates), the
// only names JSON, and so a listing, carries without changing them.
bool is_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 4;
    if (n == 4 || c == 0xc0 || c == 0xc1 || c > 0xf4 || s.size() - i <= n) return false;
    unsigned char c1 = n ? static_cast<unsigned char>(s[i + 1]) : 0;
    if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f)) {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n + 1;
  }
  return true;
}

namespace {

std::vector<std::string> path_components(const std::string& rel) {
  std::vector<std::string> parts;
  for (size_t pos = 0; pos < rel.size();) {
    size_t end = std::min(rel.find('/', pos), rel.size());
    if (end > pos) parts.push_back(rel.substr(pos, end - pos));
    pos = end + 1;
  }
  return parts;
}

// A name as a message may show it: bytes outside printable ASCII as \xNN.
std::string shown_bytes(const std::string& name) {
  std::string shown;
  for (unsigned char c : name) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    shown += c < 0x20 || c >= 0x7f ? std::string(hex) : std::string(1, static_cast<char>(c));
  }
  return shown;
}

// One page of a folder's listing: the regular files under it in listing_order,
// those after `after` only, until `limit` files or about `byte_cap` bytes of
// entries. Every folder is opened beneath the one above it with O_NOFOLLOW, so
// the walk never leaves the source, whatever is swapped in meanwhile.
class ListingPage {
 public:
  ListingPage(std::string root, const std::string& after, int64_t limit, size_t byte_cap)
      : root_(std::move(root)),
        after_(path_components(after)),
        limit_(limit),
        byte_cap_(byte_cap) {}

  // Walks the folder open at `dir` (rel "" is the source itself). False when the
  // page is full or an entry was refused (status()).
  bool walk(int dir, const std::string& rel, size_t depth, bool on_after_path) {
    DIR* d = ::fdopendir(::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!d) return fail(errno_status("open folder " + shown(rel), errno));
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    std::sort(names.begin(), names.end());
    bool going = true;
    // Below `after`'s own folders everything comes after it; beside them, what sorts after its name.
    const std::string* bound = on_after_path && depth < after_.size() ? &after_[depth] : nullptr;
    for (const auto& n : names) {
      if (bound && n < *bound) continue;
      std::string r = rel.empty() ? n : rel + "/" + n;
      if (!is_utf8(n)) {
        // JSON would carry it as U+FFFD and the read would then fail "no such file" (review F20.7).
        going = fail(invalid_argument("the file name " + shown_bytes(shown(r)) +
                                      " is not UTF-8: ferry copies only UTF-8 names; rename it"));
        break;
      }
      if (is_copy_bookkeeping(n)) continue;  // our own files never travel
      struct stat st;
      if (::fstatat(::dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        going = fail(errno_status("stat " + shown(r), errno));
        break;
      }
      const bool on_path = bound && n == *bound;
      if (S_ISDIR(st.st_mode)) {
        UniqueFd sub(::openat(::dirfd(d), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        going =
            sub.ok() ? walk(sub.get(), r, depth + 1, on_path) : fail(errno_status("open folder " + shown(r), errno));
      } else if (S_ISREG(st.st_mode)) {
        if (on_path) continue;  // `after` itself: the last page ended with it
        going = add(r, st);
      } else {
        going = fail(invalid_argument(shown(r) + " is not a regular file or folder (symlinks are not copied)"));
      }
      if (!going) break;
    }
    ::closedir(d);
    return going;
  }

  bool add(const std::string& rel, const struct stat& st) {
    if (static_cast<int64_t>(files_.size()) >= limit_ || bytes_ >= byte_cap_) {
      more_ = true;  // the next page starts here
      return false;
    }
    bytes_ += rel.size() + kListEntryOverheadBytes;
    files_.push_back(listing_entry(rel, st));
    return true;
  }
  bool fail(Status s) {
    status_ = std::move(s);
    return false;
  }
  std::string shown(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }

  const Status& status() const { return status_; }
  bool more() const { return more_; }
  std::vector<protocol::ListedFile> take_files() { return std::move(files_); }

 private:
  // An entry's JSON beside its path (size, mode, mtime_ns, ino and the punctuation).
  static constexpr size_t kListEntryOverheadBytes = 96;
  std::string root_;
  std::vector<std::string> after_;
  int64_t limit_;
  size_t byte_cap_;
  size_t bytes_ = 0;
  std::vector<protocol::ListedFile> files_;
  bool more_ = false;
  Status status_;
};

Result<protocol::FsListReply> list_open_source(int source, const std::string& shown, const std::string& after,
                                               int64_t limit, size_t byte_cap) {
  struct stat st;
  if (::fstat(source, &st) != 0) return errno_status("copy source " + shown, errno);
  protocol::FsListReply listing;
  if (S_ISREG(st.st_mode)) {
    if (after.empty()) listing.files.push_back(listing_entry("", st));
    return listing;
  }
  if (!S_ISDIR(st.st_mode)) return invalid_argument("copy source " + shown + " is not a file or folder");
  ListingPage page(shown, after, limit, byte_cap);
  page.walk(source, "", 0, /*on_after_path=*/!after.empty());
  if (!page.status().ok()) return page.status();
  listing.type = protocol::FsType::kDir;
  listing.files = page.take_files();
  listing.more = page.more();
  return listing;
}

}  // namespace

int64_t file_mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

protocol::FsStatReply stat_reply(const std::string& path) {
  protocol::FsStatReply reply;
  reply.path = path;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return reply;
  reply.exists = true;
  reply.type = S_ISDIR(st.st_mode)   ? protocol::FsType::kDir
               : S_ISREG(st.st_mode) ? protocol::FsType::kFile
                                     : protocol::FsType::kOther;
  reply.size = static_cast<int64_t>(st.st_size);
  reply.mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  reply.mtime_ns = file_mtime_ns(st);
  reply.ino = static_cast<int64_t>(st.st_ino);
  return reply;
}

bool listing_order(const std::string& a, const std::string& b) { return path_components(a) < path_components(b); }

Result<protocol::FsListReply> list_source_page(int source, const std::string& shown, const std::string& after,
                                               int64_t limit) {
  return list_open_source(source, shown, after, std::clamp<int64_t>(limit, 1, kMaxListPageFiles), kMaxListPageBytes);
}

Result<protocol::FsListReply> list_source(const std::string& path) {
  // Non-blocking: a FIFO named as a source must be refused, not waited on.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) return errno_status("copy source " + path, errno);
  return list_source(fd.get(), path);
}

Result<protocol::FsListReply> list_source(int source, const std::string& shown) {
  return list_open_source(source, shown, "", INT64_MAX, SIZE_MAX);
}

Result<std::string> read_chunk(const std::string& path, int64_t offset, int64_t length, std::string* hash) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return errno_status("open " + path, errno);
  return read_chunk(fd.get(), path, offset, length, hash);
}

Result<std::string> read_chunk(int fd, const std::string& path, int64_t offset, int64_t length, std::string* hash) {
  if (offset < 0 || length < 0 || length > kMaxChunkBytes) return invalid_argument("bad read range");
  std::string data = protocol::take_body_buffer(static_cast<size_t>(length));  // pread fills it all
  FERRY_RETURN_IF_ERROR(pread_all(fd, data.data(), length, offset, path));
  *hash = xxh128_hex(data.data(), data.size());
  return data;
}

Result<std::map<int64_t, std::string>> hash_chunks(const std::string& path, int64_t chunk_size,
                                                   const std::vector<int64_t>& indices) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return errno_status("open " + path, errno);
  return hash_chunks(fd.get(), path, chunk_size, indices);
}

Result<std::map<int64_t, std::string>> hash_chunks(int fd, const std::string& path, int64_t chunk_size,
                                                   const std::vector<int64_t>& indices) {
  if (chunk_size <= 0 || chunk_size > kMaxChunkBytes) return invalid_argument("bad chunk size");
  struct stat st;
  if (::fstat(fd, &st) != 0) return errno_status("stat " + path, errno);
  std::vector<int64_t> all = indices;
  if (all.empty()) {
    for (int64_t i = 0; i < chunk_count(st.st_size, chunk_size); ++i) all.push_back(i);
  }
  return hash_range(fd, path, st.st_size, chunk_size, all);
}

std::string file_hash_of(const std::vector<std::string>& chunk_hashes) {
  std::string joined;
  for (const auto& h : chunk_hashes) joined += h;
  return xxh128_hex(joined.data(), joined.size());
}

namespace {

// DEST opened without following a symlink, when it is a plain file (checked on
// what was opened, not on the name).
UniqueFd open_plain_file(const DestFile& d, struct stat* st) {
  UniqueFd fd(::openat(d.fd(), d.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok() || ::fstat(fd.get(), st) != 0 || !S_ISREG(st->st_mode)) return UniqueFd();
  return fd;
}

// Whether DEST holds exactly the chunks `chunk_hashes`.
bool holds_chunks(int fd, const DestFile& d, int64_t size, int64_t chunk_size,
                  const std::vector<std::string>& chunk_hashes) {
  if (chunk_count(size, chunk_size) != static_cast<int64_t>(chunk_hashes.size())) return false;
  auto hashes = hash_chunks(fd, d.shown(), chunk_size, {});
  if (!hashes.ok() || hashes->size() != chunk_hashes.size()) return false;
  for (const auto& [i, h] : *hashes) {
    if (h != chunk_hashes[static_cast<size_t>(i)]) return false;
  }
  return true;
}

// Whether DEST is already the file `file_hash` names, reusable as it is: only a
// plain file of ours that others cannot write is (a symlink or another user's file
// could change after the check, and the eval worker is run from here: review N7).
bool already_there(const DestFile& d, int64_t size, int64_t chunk_size, const std::string& file_hash) {
  struct stat st;
  UniqueFd fd = open_plain_file(d, &st);
  if (!fd.ok() || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0 || st.st_size != size) return false;
  auto hashes = hash_chunks(fd.get(), d.shown(), chunk_size, {});
  if (!hashes.ok()) return false;
  std::vector<std::string> list;
  for (auto& [i, h] : *hashes) list.push_back(h);
  return file_hash_of(list) == file_hash;
}

// Whether DEST already holds exactly these chunks: a commit repeated because the
// reply to the first one was lost with the link finds its work done.
bool already_committed(const DestFile& d, int64_t chunk_size, const std::vector<std::string>& chunk_hashes) {
  struct stat st;
  UniqueFd fd = open_plain_file(d, &st);
  return fd.ok() && holds_chunks(fd.get(), d, st.st_size, chunk_size, chunk_hashes);
}

// A destination named by its path alone (the coordinator's keep_local, tests):
// its folder opened as named, then the same *at() code.
template <typename R, typename Act>
R in_folder_of(const std::string& dest, bool create, Act act) {
  std::string name;
  auto dir = open_dest_parent("", dest, create, &name);
  if (!dir.ok()) return dir.status();
  return act(*dir, name);
}

}  // namespace

Result<ReceiveState> receive_begin(const DestFolder& dir, const std::string& name, int64_t size, int64_t chunk_size,
                                   int mode, const std::string& expected_file_hash, const std::string& owner) {
  if (size < 0 || chunk_size <= 0 || chunk_size > kMaxChunkBytes) return invalid_argument("bad size or chunk size");
  const DestFile d{dir, name};
  FERRY_RETURN_IF_ERROR(claim_dest(d, owner, /*beginning=*/true));
  ReceiveState state;
  if (!expected_file_hash.empty() && already_there(d, size, chunk_size, expected_file_hash)) {
    state.complete = true;
    if (!owner.empty()) {
      // Nothing to write or commit: the lease ends here.
      auto lock = lock_dest(d);
      if (lock.ok()) release_dest(d);
    }
    return state;
  }
  nlohmann::json spec = {{"size", size}, {"chunk_size", chunk_size}};
  auto old_spec = read_file_at(d.fd(), d.file(kSpec), d.shown(kSpec));
  // A part file to resume is a plain file of ours: a symlink planted at its name
  // (a shared, group-writable folder) is removed, never written through.
  struct stat part_st;
  bool part_is_file =
      ::fstatat(d.fd(), d.file(kPart).c_str(), &part_st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(part_st.st_mode);
  bool resume = old_spec.ok() && nlohmann::json::parse(*old_spec, nullptr, false) == spec && part_is_file;
  if (!resume) {
    ::unlinkat(d.fd(), d.file(kPart).c_str(), 0);
    ::unlinkat(d.fd(), d.file(kJournal).c_str(), 0);
    // Refuse early when the bytes cannot fit, rather than fail half way.
    struct statvfs vfs;
    if (::fstatvfs(d.fd(), &vfs) == 0) {
      int64_t free_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
      if (free_bytes < size) {
        return Status(StatusCode::kFailedPrecondition, "no space for " + d.shown() + ": needs " + std::to_string(size) +
                                                           " bytes, " + std::to_string(free_bytes) + " free");
      }
    }
    // A hint, like the journal: one lost in a crash only means the part starts over.
    FERRY_RETURN_IF_ERROR(
        write_file_atomic_at(d.fd(), d.file(kSpec), d.shown(kSpec), spec.dump(), 0644, /*durable=*/false));
  }
  // Never through a symlink someone planted at our part file's name.
  UniqueFd fd(::openat(d.fd(), d.file(kPart).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (resume ? 0 : O_EXCL),
                       (mode & 0777) | 0600));
  if (!fd.ok()) return errno_status("create " + d.shown(kPart), errno);
  if (::ftruncate(fd.get(), size) != 0) return errno_status("size " + d.shown(kPart), errno);
  if (resume) {
    // Journal entries are hints: trust only chunks whose bytes still match.
    auto journal = read_file_at(d.fd(), d.file(kJournal), d.shown(kJournal));
    std::map<int64_t, std::string> claimed;
    if (journal.ok()) {
      size_t pos = 0;
      while (pos < journal->size()) {
        size_t end = journal->find('\n', pos);
        if (end == std::string::npos) break;  // a torn last line is ignored
        std::string line = journal->substr(pos, end - pos);
        size_t sp = line.find(' ');
        if (sp != std::string::npos) claimed[std::atoll(line.substr(0, sp).c_str())] = line.substr(sp + 1);
        pos = end + 1;
      }
    }
    std::vector<int64_t> idx;
    for (auto& [i, h] : claimed) {
      if (i >= 0 && i < chunk_count(size, chunk_size)) idx.push_back(i);
    }
    auto actual = hash_range(fd.get(), d.shown(kPart), size, chunk_size, idx);
    if (actual.ok()) {
      for (auto& [i, h] : *actual) {
        if (claimed[i] == h) state.have[i] = h;
      }
    }
    std::string rewritten;
    for (auto& [i, h] : state.have) rewritten += std::to_string(i) + " " + h + "\n";
    fd.reset();
    FERRY_RETURN_IF_ERROR(write_file_atomic_at(d.fd(), d.file(kJournal), d.shown(kJournal), rewritten));
  }
  return state;
}

Result<ReceiveState> receive_begin(const std::string& dest, int64_t size, int64_t chunk_size, int mode,
                                   const std::string& expected_file_hash, const std::string& owner) {
  return in_folder_of<Result<ReceiveState>>(dest, /*create=*/true, [&](const DestFolder& dir, const std::string& n) {
    return receive_begin(dir, n, size, chunk_size, mode, expected_file_hash, owner);
  });
}

Status receive_write(const DestFolder& dir, const std::string& name, int64_t index, int64_t chunk_size,
                     const std::string& hash, const std::string& data, const std::string& owner) {
  if (index < 0 || chunk_size <= 0) return invalid_argument("bad chunk index");
  const DestFile d{dir, name};
  FERRY_RETURN_IF_ERROR(claim_dest(d, owner, /*beginning=*/false));
  // The chunk must be one of the file recv.begin announced (its spec): a sender's index
  // or length never grows the part file or overflows an offset (review F21).
  auto spec_text = read_file_at(d.fd(), d.file(kSpec), d.shown(kSpec));
  if (!spec_text.ok()) {
    return Status(spec_text.status().code(), "no copy of " + d.shown() + " was begun: " + spec_text.status().message());
  }
  nlohmann::json spec = nlohmann::json::parse(*spec_text, nullptr, false);
  if (!spec.is_object() || !spec.contains("size") || !spec["size"].is_number_integer() ||
      spec["chunk_size"] != chunk_size) {
    return invalid_argument("chunk size " + std::to_string(chunk_size) + " is not the one " + d.shown() +
                            " was begun with");
  }
  const int64_t size = spec["size"].get<int64_t>();
  if (index >= chunk_count(size, chunk_size) ||
      static_cast<int64_t>(data.size()) != std::min(chunk_size, size - index * chunk_size)) {
    return invalid_argument("chunk " + std::to_string(index) + " (" + std::to_string(data.size()) +
                            " bytes) is not a chunk of " + d.shown() + " (" + std::to_string(size) + " bytes)");
  }
  std::string actual = xxh128_hex(data.data(), data.size());
  if (actual != hash) {
    return data_loss("chunk " + std::to_string(index) + " of " + d.shown() + " arrived with hash " + actual +
                     ", expected " + hash);
  }
  const std::string part = d.shown(kPart);
  UniqueFd fd(::openat(d.fd(), d.file(kPart).c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) return errno_status("open " + part + " (was the copy begun?)", errno);
  // A chunk of zeros (a sparse source's hole, padding) becomes a hole here too: it
  // reads back the same and costs no disk; where the file system cannot punch, it is written.
  const bool zeros =
      !data.empty() && data[0] == '\0' && std::memcmp(data.data(), data.data() + 1, data.size() - 1) == 0;
  const bool punched = zeros && ::fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, index * chunk_size,
                                            static_cast<off_t>(data.size())) == 0;
  Status s = punched ? Status()
                     : pwrite_all(fd.get(), data.data(), static_cast<int64_t>(data.size()), index * chunk_size, part);
  // Start writing the chunk to disk now, without waiting for it: otherwise the whole
  // file is still dirty when commit fsyncs it, and that fsync (about 0.5 s per GiB
  // on the testbed) runs after the last byte arrived instead of alongside the copy.
  if (s.ok() && !punched) {
    (void)::sync_file_range(fd.get(), index * chunk_size, static_cast<off_t>(data.size()), SYNC_FILE_RANGE_WRITE);
  }
  fd.reset();
  if (!s.ok()) return s;
  // One short O_APPEND write per chunk: concurrent writers never interleave inside a line.
  return append_file_at(d.fd(), d.file(kJournal), d.shown(kJournal), std::to_string(index) + " " + hash + "\n", 0600);
}

Status receive_write(const std::string& dest, int64_t index, int64_t chunk_size, const std::string& hash,
                     const std::string& data, const std::string& owner) {
  return in_folder_of<Status>(dest, /*create=*/false, [&](const DestFolder& dir, const std::string& n) {
    return receive_write(dir, n, index, chunk_size, hash, data, owner);
  });
}

Status receive_commit(const DestFolder& dir, const std::string& name, int64_t chunk_size,
                      const std::vector<std::string>& chunk_hashes, std::vector<int64_t>* bad,
                      const std::string& owner) {
  if (chunk_size <= 0 || chunk_size > kMaxChunkBytes) return invalid_argument("bad chunk size");
  const DestFile d{dir, name};
  const std::string part = d.shown(kPart);
  if (!owner.empty()) {
    // The whole commit under the destination's lock: no other copy's begin or
    // write lands between the verification and the rename.
    auto lock = lock_dest(d);
    if (!lock.ok()) return lock.status();
    FERRY_RETURN_IF_ERROR(check_still_held(d, owner));
    Status s = receive_commit(dir, name, chunk_size, chunk_hashes, bad, "");
    if (s.ok()) release_dest(d);  // the lease ends with the commit
    return s;
  }
  UniqueFd fd(::openat(d.fd(), d.file(kPart).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) {
    int err = errno;
    if (err == ENOENT && already_committed(d, chunk_size, chunk_hashes)) return Status();
    return errno_status("open " + part, err);
  }
  struct stat st;
  ::fstat(fd.get(), &st);
  if (chunk_count(st.st_size, chunk_size) != static_cast<int64_t>(chunk_hashes.size())) {
    return data_loss(part + " has the wrong size");
  }
  std::vector<int64_t> all;
  for (int64_t i = 0; i < static_cast<int64_t>(chunk_hashes.size()); ++i) all.push_back(i);
  auto actual = hash_range(fd.get(), part, st.st_size, chunk_size, all);
  if (!actual.ok()) return actual.status();
  for (auto& [i, h] : *actual) {
    if (h != chunk_hashes[static_cast<size_t>(i)]) bad->push_back(i);
  }
  if (!bad->empty()) {
    fd.reset();
    // Forget the bad chunks so a resumed copy sends them again.
    std::string rewritten;
    for (auto& [i, h] : *actual) {
      if (h == chunk_hashes[static_cast<size_t>(i)]) rewritten += std::to_string(i) + " " + h + "\n";
    }
    Status w = write_file_atomic_at(d.fd(), d.file(kJournal), d.shown(kJournal), rewritten);
    return data_loss(std::to_string(bad->size()) + " chunk(s) of " + d.shown() + " failed verification on disk" +
                     (w.ok() ? "" : " (and its journal could not be rewritten: " + w.message() + ")"));
  }
  // Verified bytes are committed only once they are on disk: a write error the
  // kernel held back (delayed allocation on a full disk, EIO, an NFS server)
  // surfaces at fsync, and then the part file stays a part file.
  fd.reset();
  {
    UniqueFd written(::openat(d.fd(), d.file(kPart).c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!written.ok()) return errno_status("open " + part + " to flush it", errno);
    if (::fsync(written.get()) != 0) {
      return data_loss("flushing " + part + " to disk failed (" + std::strerror(errno) + "); " + d.shown() +
                       " was not committed");
    }
  }
  if (::renameat(d.fd(), d.file(kPart).c_str(), d.fd(), name.c_str()) != 0) {
    return errno_status("rename " + part, errno);
  }
  if (::fsync(d.fd()) != 0) {
    return data_loss("flushing the folder " + dir.path + " to disk failed (" + std::strerror(errno) + "); " +
                     d.shown() + " may not survive a crash");
  }
  ::unlinkat(d.fd(), d.file(kJournal).c_str(), 0);
  ::unlinkat(d.fd(), d.file(kSpec).c_str(), 0);
  return Status();
}

Status receive_commit(const std::string& dest, int64_t chunk_size, const std::vector<std::string>& chunk_hashes,
                      std::vector<int64_t>* bad, const std::string& owner) {
  return in_folder_of<Status>(dest, /*create=*/false, [&](const DestFolder& dir, const std::string& n) {
    return receive_commit(dir, n, chunk_size, chunk_hashes, bad, owner);
  });
}

Status receive_prepare_dir(const DestFolder& dir, const std::vector<std::string>* incoming) {
  if (::unlinkat(dir.fd.get(), kCompleteMarker, 0) != 0 && errno != ENOENT) {
    return errno_status("remove " + dir.shown(kCompleteMarker), errno);
  }
  return incoming ? record_copied_files(dir, *incoming) : Status();
}

Status receive_prepare_dir(const std::string& dir, const std::vector<std::string>* incoming) {
  auto folder = open_dest_folder("", dir, /*create=*/true);
  if (!folder.ok()) return folder.status();
  return receive_prepare_dir(*folder, incoming);
}

void append_keep_entry(std::string* body, const std::string& rel) {
  *body += rel;
  *body += '\0';
}

std::string encode_keep_list(const std::vector<std::string>& rels) {
  std::string out;
  for (const auto& r : rels) append_keep_entry(&out, r);
  return out;
}

std::vector<std::string> decode_keep_list(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\0', pos);
    if (end == std::string::npos) end = body.size();
    out.push_back(body.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

Status receive_finish_dir(const DestFolder& dir, const std::string& manifest_hash, const std::vector<std::string>* keep,
                          PruneReport* pruned) {
  if (keep) {
    PruneReport report;
    FERRY_RETURN_IF_ERROR(prune_copied_files(dir, *keep, &report));
    if (pruned) *pruned = std::move(report);
  }
  return write_file_atomic_at(dir.fd.get(), kCompleteMarker, dir.shown(kCompleteMarker), manifest_hash + "\n");
}

Status receive_finish_dir(const std::string& dir, const std::string& manifest_hash,
                          const std::vector<std::string>* keep, PruneReport* pruned) {
  auto folder = open_dest_folder("", dir, /*create=*/false);
  if (!folder.ok()) return folder.status();
  return receive_finish_dir(*folder, manifest_hash, keep, pruned);
}

}  // namespace ferry
