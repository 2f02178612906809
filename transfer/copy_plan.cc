#include "transfer/copy_plan.h"

#include <algorithm>
#include <limits>
#include <set>

#include "protocol/frame.h"
#include "protocol/ops/fs.h"
#include "protocol/ops/recv.h"
#include "transfer/chunk_files.h"
#include "transfer/copy_manifest.h"

namespace ferry {
namespace {

std::string basename_of(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

}  // namespace

std::string copy_dest_for(const std::string& to, const std::string& from, const std::string& rel, bool is_dir) {
  if (is_dir) return to + "/" + rel;
  if (!to.empty() && to.back() == '/') return to + basename_of(from);
  return to;
}

int64_t copy_chunk_len(int64_t size, int64_t chunk_size, int64_t index) {
  return std::min(chunk_size, size - index * chunk_size);
}

Status check_copy_rel(const std::string& rel) {
  if (rel.empty()) return invalid_argument("an empty path");
  if (rel[0] == '/') return invalid_argument("an absolute path '" + rel + "'");
  if (rel.find('\0') != std::string::npos) return invalid_argument("a path with a NUL byte");
  size_t pos = 0;
  for (;;) {
    size_t end = rel.find('/', pos);
    std::string part = rel.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (part.empty() || part == "." || part == "..") {
      return invalid_argument("path '" + rel + "' has a '" + part + "' component (it must stay inside the copy)");
    }
    if (end == std::string::npos) return Status();
    pos = end + 1;
  }
}

std::string CopyFile::src() const {
  if (!roots) return "";
  return roots->is_dir ? roots->from + "/" + rel : roots->from;
}

std::string CopyFile::dest() const { return roots ? copy_dest_for(roots->to, roots->from, rel, roots->is_dir) : ""; }

const std::string& CopyFile::owner() const {
  static const std::string kNone;
  return roots ? roots->owner : kNone;
}

Result<CopyListing> plan_copy(protocol::FsListReply listing, const std::string& from, const std::string& to,
                              int64_t chunk_size, const std::string& owner) {
  CopyListing out;
  std::vector<CopyFile> files;
  files.reserve(listing.files.size());
  FERRY_RETURN_IF_ERROR(plan_copy_each(std::move(listing), from, to, chunk_size, owner, &out,
                                       [&files](CopyFile&& f) { files.push_back(std::move(f)); }));
  out.files = std::move(files);
  return out;
}

Status plan_copy_each(protocol::FsListReply listing, const std::string& from, const std::string& to, int64_t chunk_size,
                      const std::string& owner, CopyListing* listed, const std::function<void(CopyFile&&)>& take) {
  // The listing comes from the source host's agent: its shape was read exactly
  // (FsListReply::from_json), its values are still not trusted.
  auto bad = [&](const std::string& why) { return data_loss("listing of " + from + ": " + why); };
  if (chunk_size <= 0) return bad("chunk size " + std::to_string(chunk_size));
  CopyListing& out = *listed;
  int64_t chunks_total = 0;
  out.is_dir = listing.type == protocol::FsType::kDir;
  if (!out.is_dir && listing.type != protocol::FsType::kFile) return bad("a source that is not a file or folder");
  if (!out.is_dir && listing.files.size() != 1) return bad("a file listing must name exactly one file");
  auto roots = std::make_shared<CopyRoots>(CopyRoots{from, to, out.is_dir, owner});
  for (auto& f : listing.files) {
    CopyFile file;
    file.rel = std::move(f.path);
    file.size = f.size;
    if (file.size < 0 || file.size > kMaxCopyFileBytes) {
      return bad("'" + file.rel + "' has an impossible size " + std::to_string(file.size));
    }
    if (f.mode < 0 || f.mode > 07777) return bad("'" + file.rel + "' has a bad mode " + std::to_string(f.mode));
    file.mode = f.mode;
    file.mtime_ns = f.mtime_ns;
    file.ino = f.ino;
    if (out.is_dir) {
      Status rel_ok = check_copy_rel(file.rel);
      if (!rel_ok.ok()) return bad(rel_ok.message());
    }
    file.roots = roots;
    file.chunks = file.size == 0 ? 0 : 1 + (file.size - 1) / chunk_size;
    chunks_total += file.chunks;
    if (chunks_total > kMaxCopyChunks || out.bytes_total > std::numeric_limits<int64_t>::max() - file.size) {
      return bad("the listed files need more than " + std::to_string(kMaxCopyChunks) + " chunks of " +
                 std::to_string(chunk_size) + " bytes (one copy may hold that many; split the copy)");
    }
    file.hashes.resize(static_cast<size_t>(file.chunks));
    out.bytes_total += file.size;
    take(std::move(file));
  }
  return Status();
}

Status take_chunk_hashes(const std::map<int64_t, std::string>& chunks, CopyFile* f) {
  if (static_cast<int64_t>(chunks.size()) != f->chunks) {
    return data_loss("the source's hashes of " + f->src() + " do not cover its " + std::to_string(f->chunks) +
                     " chunks (did it change during the copy?)");
  }
  for (const auto& [index, hash] : chunks) {
    if (index < 0 || index >= f->chunks) break;
    f->hashes[static_cast<size_t>(index)] = hash;
  }
  for (const auto& h : f->hashes) {
    if (h.empty()) return data_loss("the source's hashes of " + f->src() + " name chunks it does not have");
  }
  return Status();
}

std::string copy_manifest_hash(const std::vector<CopyFile>& files) {
  CopyManifest manifest;
  for (const auto& f : files) manifest.add(f.rel, f.size, file_hash_of(f.hashes));
  return manifest.hash();
}

std::string copy_owner(const std::string& job, int attempt, const std::string& token) {
  if (job.empty() || token.empty()) return "";
  return job + " " + std::to_string(attempt) + " " + token;
}

std::string source_change(const protocol::FsStatReply& now, const CopyFile& f) {
  if (f.mtime_ns < 0) return "";  // an agent that does not say its files' versions
  if (!now.exists) return "it is gone";
  std::string what;
  if (now.size != f.size) what += "size " + std::to_string(f.size) + " → " + std::to_string(now.size);
  if (now.mtime_ns != f.mtime_ns) what += std::string(what.empty() ? "" : ", ") + "modified";
  if (f.ino >= 0 && now.ino != f.ino) what += std::string(what.empty() ? "" : ", ") + "replaced (another inode)";
  return what;
}

bool dest_may_hold(const protocol::FsStatReply& dest, int64_t size) {
  return dest.exists && dest.type == protocol::FsType::kFile && dest.size == size;
}

void drop_stale_chunks(std::map<int64_t, std::string>* have, const std::map<int64_t, std::string>& source) {
  for (const auto& [idx, src_hash] : source) {
    auto it = have->find(idx);
    if (it != have->end() && it->second != src_hash) have->erase(it);
  }
}

std::map<int64_t, std::string> source_hashes(const CopyFile& f) {
  std::map<int64_t, std::string> all;
  for (int64_t c = 0; c < f.chunks; ++c) all[c] = f.hashes[static_cast<size_t>(c)];
  return all;
}

std::vector<int64_t> held_indices(std::initializer_list<const std::map<int64_t, std::string>*> haves) {
  std::set<int64_t> all;
  for (const auto* have : haves) {
    for (const auto& [index, hash] : *have) all.insert(index);
  }
  return {all.begin(), all.end()};
}

int64_t queue_missing_chunks(CopyFile* f, int64_t chunk_size, const std::function<bool(int64_t)>& lacks,
                             const std::function<void(int64_t)>& queue) {
  int64_t there = 0;
  for (int64_t c = 0; c < f->chunks; ++c) {
    if (lacks(c)) {
      queue(c);
      ++f->remaining;
    } else {
      f->hashes[static_cast<size_t>(c)] = f->dest_have[c];
      there += copy_chunk_len(f->size, chunk_size, c);
    }
  }
  return there;
}

int64_t listed_bytes(const protocol::FsListReply& listing) {
  int64_t total = 0;
  for (const auto& f : listing.files) {
    const int64_t size = std::max<int64_t>(0, f.size);
    total = size > std::numeric_limits<int64_t>::max() - total ? std::numeric_limits<int64_t>::max() : total + size;
  }
  return total;
}

nlohmann::json recv_begin_args(const CopyFile& f, int64_t chunk_size, const std::string& file_hash) {
  return protocol::RecvBeginArgs{f.dest(), f.size, chunk_size, f.mode, file_hash, f.owner()}.to_json();
}

void apply_recv_begin(CopyFile* f, const protocol::RecvBeginReply& reply) {
  f->dest_complete = reply.complete;
  f->dest_have.clear();
  for (const auto& [index, hash] : reply.have) {
    if (index < f->chunks) f->dest_have[index] = hash;
  }
  if (f->dest_complete) {
    for (int64_t c = 0; c < f->chunks; ++c) f->dest_have[c] = f->hashes[static_cast<size_t>(c)];
  }
}

nlohmann::json recv_write_args(const CopyFile& f, int64_t index, int64_t chunk_size, const std::string& hash) {
  return protocol::RecvWriteArgs{f.dest(), index, chunk_size, hash, f.owner()}.to_json();
}

namespace {

Result<nlohmann::json> with_body(nlohmann::json args, const std::string& key, const std::string& what,
                                 std::string* body) {
  auto moved = protocol::move_field_to_body(&args, key, what);
  if (!moved.ok()) return moved.status();
  *body = std::move(moved).value();
  return args;
}

}  // namespace

Result<nlohmann::json> recv_commit_args(const CopyFile& f, int64_t chunk_size, std::string* body) {
  nlohmann::json args = protocol::RecvCommitArgs{f.dest(), chunk_size, f.hashes, f.owner()}.to_json();
  return with_body(std::move(args), "chunks", "the chunk hashes of " + f.dest(), body);
}

Result<nlohmann::json> fs_hash_args(const CopyFile& f, int64_t chunk_size, const std::vector<int64_t>& indices,
                                    std::string* body) {
  nlohmann::json args = protocol::FsHashArgs{f.src(), chunk_size, indices}.to_json();
  return with_body(std::move(args), "indices", "the chunk indices of " + f.src(), body);
}

std::vector<int64_t> recv_commit_bad(const protocol::RecvCommitReply& reply, const CopyFile& f) {
  if (reply.committed) return {};
  std::vector<int64_t> bad;
  for (int64_t i : reply.bad) {
    if (i >= 0 && i < f.chunks) bad.push_back(i);
  }
  // Not committed and no chunk of this file named: trust none of it; send every chunk again.
  if (bad.empty()) {
    for (int64_t c = 0; c < f.chunks; ++c) bad.push_back(c);
  }
  return bad;
}

}  // namespace ferry
