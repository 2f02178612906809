#include "base/capped_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdlib>

#include "base/file_util.h"

namespace ferry {
namespace {

constexpr const char* kTailInfix = ".tail.";
constexpr int kListTries = 3;             // a chunk rotated away between listing and opening
constexpr int64_t kTailBlock = 64 << 10;  // read backwards this much at a time

struct Piece {
  int64_t start = 0;
  int64_t size = 0;
  std::string file;
};

std::string chunk_path(const std::string& path, int64_t start) { return path + kTailInfix + std::to_string(start); }

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The starts of the tail chunks beside `path`, oldest first.
Result<std::vector<int64_t>> list_chunks(const std::string& path) {
  std::vector<int64_t> starts;
  DIR* dir = ::opendir(dirname_of(path).c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return starts;
    return errno_status("list " + dirname_of(path), errno);
  }
  const std::string prefix = base_name(path) + kTailInfix;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0 || name.size() == prefix.size()) continue;
    char* end = nullptr;
    long long start = std::strtoll(name.c_str() + prefix.size(), &end, 10);
    if (*end != '\0' || start < 0) continue;
    starts.push_back(start);
  }
  ::closedir(dir);
  std::sort(starts.begin(), starts.end());
  return starts;
}

int64_t file_size(const std::string& file) {
  struct stat st;
  return ::stat(file.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// The head and the tail chunks, in stream order; a chunk gone since the listing is left out.
Result<std::vector<Piece>> pieces_of(const std::string& path) {
  std::vector<Piece> pieces;
  int64_t head = file_size(path);
  if (head < 0) return pieces;
  pieces.push_back({0, head, path});
  auto chunks = list_chunks(path);
  if (!chunks.ok()) return chunks.status();
  for (int64_t start : *chunks) {
    std::string file = chunk_path(path, start);
    int64_t size = file_size(file);
    if (size >= 0) pieces.push_back({start, size, file});
  }
  return pieces;
}

int64_t size_of(const std::vector<Piece>& pieces) {
  int64_t size = 0;
  for (const auto& p : pieces) size = std::max(size, p.start + p.size);
  return size;
}

// Reads [from, from + n) of one piece; false when its file has gone (rotated away).
Result<bool> read_piece(const Piece& p, int64_t from, int64_t n, std::string* out) {
  UniqueFd fd(::open(p.file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) {
    if (errno == ENOENT) return false;
    return errno_status("open " + p.file, errno);
  }
  out->resize(static_cast<size_t>(n));
  size_t got = 0;
  while (got < out->size()) {
    ssize_t r = ::pread(fd.get(), out->data() + got, out->size() - got, from - p.start + static_cast<int64_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno_status("read " + p.file, errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  out->resize(got);
  return true;
}

}  // namespace

std::string dropped_marker(int64_t n) {
  return "\n[ferry: " + std::to_string(n) + " bytes dropped here: the log is over its log_max]\n";
}

Result<CappedLogWriter> CappedLogWriter::open(const std::string& path, int64_t max_bytes) {
  assert(max_bytes >= 4);
  CappedLogWriter w;
  w.path_ = path;
  w.head_max_ = max_bytes / 2;
  w.chunk_max_ = max_bytes / 4;
  auto chunks = list_chunks(path);
  if (!chunks.ok()) return chunks.status();
  w.chunks_ = *chunks;
  std::string file = w.chunks_.empty() ? path : chunk_path(path, w.chunks_.back());
  w.fd_.reset(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!w.fd_.ok()) return errno_status("open " + file, errno);
  w.head_size_ = std::max<int64_t>(0, file_size(path));
  if (w.chunks_.empty()) {
    w.size_ = w.head_size_;
  } else {
    w.chunk_size_ = std::max<int64_t>(0, file_size(file));
    w.size_ = w.chunks_.back() + w.chunk_size_;
  }
  return w;
}

Status CappedLogWriter::start_chunk(int64_t start) {
  std::string file = chunk_path(path_, start);
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600));
  if (!fd.ok()) return errno_status("open " + file, errno);
  fd_ = std::move(fd);
  if (chunks_.empty() || chunks_.back() != start) chunks_.push_back(start);
  chunk_size_ = 0;
  // The new chunk exists before the oldest goes, so a reader always finds the newest bytes.
  while (chunks_.size() > 2) {
    ::unlink(chunk_path(path_, chunks_.front()).c_str());
    chunks_.erase(chunks_.begin());
  }
  return Status();
}

Status CappedLogWriter::append(const char* data, size_t n) {
  while (n > 0) {
    int64_t room;
    bool head = chunks_.empty() && head_size_ < head_max_;
    if (head) {
      room = head_max_ - head_size_;
    } else {
      if (chunks_.empty() || chunk_size_ >= chunk_max_) FERRY_RETURN_IF_ERROR(start_chunk(size_));
      room = chunk_max_ - chunk_size_;
    }
    size_t take = static_cast<size_t>(std::min<int64_t>(room, static_cast<int64_t>(n)));
    ssize_t w = ::write(fd_.get(), data, take);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno_status("write " + (head ? path_ : chunk_path(path_, chunks_.back())), errno);
    (head ? head_size_ : chunk_size_) += w;
    size_ += w;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status();
}

Status CappedLogWriter::skip(int64_t n) {
  if (n <= 0) return Status();
  // An empty chunk at the new offset records the gap for every later reader and writer.
  FERRY_RETURN_IF_ERROR(start_chunk(size_ + n));
  size_ += n;
  return Status();
}

Result<CappedLogRead> read_capped_log(const std::string& path, int64_t offset, int64_t max) {
  for (int tries = 0;; ++tries) {
    auto pieces = pieces_of(path);
    if (!pieces.ok()) return pieces.status();
    CappedLogRead r;
    r.offset = offset;
    r.size = size_of(*pieces);
    const Piece* from = nullptr;
    for (const auto& p : *pieces) {
      if (p.size == 0 || p.start + p.size <= offset) continue;
      from = &p;  // the first piece that still holds bytes at or after the offset
      break;
    }
    if (from == nullptr) {
      // Nothing kept from here to the end (the last bytes could not be written).
      if (r.size > offset) {
        r.dropped = r.size - offset;
        r.offset = r.size;
      }
      return r;
    }
    if (max <= 0) return r;
    if (from->start > offset) {
      r.dropped = from->start - offset;
      r.offset = from->start;
    }
    auto got = read_piece(*from, r.offset, std::min(max, from->start + from->size - r.offset), &r.bytes);
    if (!got.ok()) return got.status();
    if (*got || tries + 1 >= kListTries) return r;
  }
}

int64_t capped_log_size(const std::string& path) {
  auto pieces = pieces_of(path);
  return pieces.ok() ? size_of(*pieces) : 0;
}

Result<std::string> capped_log_tail(const std::string& path, int lines, int64_t* end) {
  auto pieces = pieces_of(path);
  if (!pieces.ok()) return pieces.status();
  if (end != nullptr) *end = size_of(*pieces);  // what is read is within these sizes
  if (lines <= 0) return std::string();
  std::vector<std::string> blocks;  // newest first
  int64_t newlines = 0;
  bool trailing_newline_seen = false, ends_with_newline = false;
  for (size_t i = pieces->size(); i-- > 0 && newlines <= lines;) {
    const Piece& p = (*pieces)[i];
    for (int64_t end = p.start + p.size; end > p.start && newlines <= lines;) {
      int64_t from = std::max(p.start, end - kTailBlock);
      std::string block;
      auto got = read_piece(p, from, end - from, &block);
      if (!got.ok()) return got.status();
      if (!*got) break;  // rotated away while we read: what is newer is enough
      if (!trailing_newline_seen && !block.empty()) {
        ends_with_newline = block.back() == '\n';
        trailing_newline_seen = true;
      }
      newlines += std::count(block.begin(), block.end(), '\n');
      blocks.push_back(std::move(block));
      end = from;
    }
    int64_t before = i > 0 ? (*pieces)[i - 1].start + (*pieces)[i - 1].size : 0;
    if (i > 0 && before < p.start && p.size > 0 && newlines <= lines) {
      std::string marker = dropped_marker(p.start - before);
      newlines += std::count(marker.begin(), marker.end(), '\n');
      blocks.push_back(std::move(marker));
    }
  }
  std::string all;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) all += *it;
  // Past the newline that ends the line before the last `lines` ones.
  int64_t want = lines + (ends_with_newline ? 1 : 0);
  size_t start = all.size();
  for (int64_t seen = 0; start > 0;) {
    if (all[start - 1] == '\n' && ++seen == want) break;
    --start;
  }
  return all.substr(start);
}

}  // namespace ferry
