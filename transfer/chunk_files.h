// Chunked, verified file transfer at the file level: the reading side (list,
// read with a hash, hash ranges) and the receiving side (begin, write a verified
// chunk, commit, finish a folder). Used by the agent for remote ends and by the
// coordinator itself for `keep_local`, so both sides share one implementation.
//
// The receiver's promise: a destination file is absent or complete. It writes to
// DEST.ferry-part, records each verified chunk in DEST.ferry-journal (a hint:
// entries are re-verified against the part file before they are trusted again),
// and commit re-hashes every chunk on disk, fsyncs, and renames into place. A
// folder gets its completion marker (.ferry-complete) only after all its files.
//
// Every receiving call acts in a destination folder held open (DestFolder,
// transfer/dest_folder.h) through *at() calls: a relative destination checked
// beneath the workdir is what is written, even if a folder on its path is swapped
// for a symlink meanwhile (review F26). The overloads that take a path open its
// folder as named and run the same code (the coordinator's keep_local, tests).
//
// Hashes are XXH3-128 as 32 hex digits (base/file_hash.h); a file's hash is the
// XXH3-128 of its chunk hashes in order, so it can be checked chunk by chunk.
// Plain functions over files; several processes may write disjoint chunks of the
// same part file at once. Any thread.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "protocol/ops/fs.h"
#include "transfer/copied_files.h"
#include "transfer/copy_bookkeeping.h"
#include "transfer/dest_folder.h"

namespace ferry {

inline constexpr int64_t kMaxChunkBytes = 32 << 20;

/// Whether `s` is well-formed UTF-8 (RFC 3629): the only names JSON, and so a
/// listing, carries without changing them.
bool is_utf8(const std::string& s);

/// A file's modification time in nanoseconds (with its inode, its version).
int64_t file_mtime_ns(const struct stat& st);

/// What fs.stat says of `path` (only exists = false and the path when there is nothing).
protocol::FsStatReply stat_reply(const std::string& path);

/// What a source path holds: a file, or a folder's files (each path relative to
/// the source; "" for a single file), with more = false. Only regular files;
/// symlinks and specials are refused with their name, and no folder is entered
/// through a symlink. All of it at once: for the push, which lists its own host's
/// source in-process.
Result<protocol::FsListReply> list_source(const std::string& path);
/// The same of the source open at `source` (named `shown` in errors).
Result<protocol::FsListReply> list_source(int source, const std::string& shown);

/// fs.list answers in pages, so a folder of 200,000 shards meets no frame cap
/// and no reply grows with the folder: a page holds at most `limit` files
/// (kListPageFiles unless asked, never over kMaxListPageFiles) and about
/// kMaxListPageBytes of entries.
inline constexpr int64_t kListPageFiles = 4096;
inline constexpr int64_t kMaxListPageFiles = 65536;
inline constexpr size_t kMaxListPageBytes = 4 << 20;
/// One page of the source open at `source` (named `shown` in errors): the files
/// that come after `after` in listing_order ("" from the start), and `more` true
/// when others remain (the next page is asked for after this one's last path).
Result<protocol::FsListReply> list_source_page(int source, const std::string& shown, const std::string& after,
                                               int64_t limit);
/// The order of a listing: component by component ("a/b" before "a-c"), as the
/// walk visits folders; pages come in this order, strictly increasing.
bool listing_order(const std::string& a, const std::string& b);

/// Reads [offset, offset+length) of `path` (or of `fd`, named `path` in errors);
/// returns the bytes, sets *hash.
Result<std::string> read_chunk(const std::string& path, int64_t offset, int64_t length, std::string* hash);
Result<std::string> read_chunk(int fd, const std::string& path, int64_t offset, int64_t length, std::string* hash);

/// Hashes of the given chunk indices of `path` or `fd` (all when `indices` is empty).
Result<std::map<int64_t, std::string>> hash_chunks(const std::string& path, int64_t chunk_size,
                                                   const std::vector<int64_t>& indices);
Result<std::map<int64_t, std::string>> hash_chunks(int fd, const std::string& path, int64_t chunk_size,
                                                   const std::vector<int64_t>& indices);

/// The hash of a file from its chunk hashes, in order.
std::string file_hash_of(const std::vector<std::string>& chunk_hashes);

struct ReceiveState {
  bool complete = false;                // dest already holds exactly these bytes
  std::map<int64_t, std::string> have;  // verified chunks in the part file
};

/// Prepares DEST.ferry-part (DEST: `name` in `dir`) for a file of `size` bytes; resumes a part left by an
/// earlier attempt of the same size and chunk size. `expected_file_hash` (may be
/// "") lets an identical existing destination be skipped.
///
/// `owner` ("<job> <attempt> <token>", or "" for none) leases DEST to one copy
/// from begin to commit (DEST.ferry-owner, its mtime renewed by each write, taken
/// under a flock on DEST.ferry-lock): a second copy into the same DEST gets
/// kUnavailable ("being written by another copy") and waits, so two copies never
/// write one part file. A newer attempt of the same job takes the lease over; a
/// lease not renewed for kDestLeaseMs has expired (its copy died).
Result<ReceiveState> receive_begin(const DestFolder& dir, const std::string& name, int64_t size, int64_t chunk_size,
                                   int mode, const std::string& expected_file_hash, const std::string& owner = "");
Result<ReceiveState> receive_begin(const std::string& dest, int64_t size, int64_t chunk_size, int mode,
                                   const std::string& expected_file_hash, const std::string& owner = "");
/// Verifies `data` against `hash`, writes it at index*chunk_size, journals it.
Status receive_write(const DestFolder& dir, const std::string& name, int64_t index, int64_t chunk_size,
                     const std::string& hash, const std::string& data, const std::string& owner = "");
Status receive_write(const std::string& dest, int64_t index, int64_t chunk_size, const std::string& hash,
                     const std::string& data, const std::string& owner = "");
/// Checks every chunk on disk against `chunk_hashes`; on success fsyncs and renames
/// into place, and ends `owner`'s lease. On mismatch returns kDataLoss and lists
/// the bad chunks in *bad.
Status receive_commit(const DestFolder& dir, const std::string& name, int64_t chunk_size,
                      const std::vector<std::string>& chunk_hashes, std::vector<int64_t>* bad,
                      const std::string& owner = "");
Status receive_commit(const std::string& dest, int64_t chunk_size, const std::vector<std::string>& chunk_hashes,
                      std::vector<int64_t>* bad, const std::string& owner = "");
inline constexpr int64_t kDestLeaseMs = 120'000;
/// In the kUnavailable message of a destination leased to another copy: the link
/// is fine, the copy waits and asks again.
inline constexpr char kDestBusy[] = "being written by another copy";
/// Folder copies: in `dir` (opened with `create`), removes a stale completion
/// marker and, with `incoming` (the copy's files, relative to `dir`), records them
/// as ferry's before any is written (transfer/copied_files.h).
Status receive_prepare_dir(const DestFolder& dir, const std::vector<std::string>* incoming = nullptr);
/// The same, creating the folder `dir` first.
Status receive_prepare_dir(const std::string& dir, const std::vector<std::string>* incoming = nullptr);
/// Writes the completion marker (temp + rename) holding the manifest hash. With
/// `keep` (the copy's files), first removes the files an earlier ferry copy wrote
/// there that this one lacks (a sharded checkpoint copied over a single-file one
/// must not leave the old weights to be loaded), and names in `pruned` what it
/// removed and what it left: files ferry did not write are never removed. The
/// prune acts in the folder `dir` holds open only, whatever its path names by then.
Status receive_finish_dir(const DestFolder& dir, const std::string& manifest_hash,
                          const std::vector<std::string>* keep = nullptr, PruneReport* pruned = nullptr);
Status receive_finish_dir(const std::string& dir, const std::string& manifest_hash,
                          const std::vector<std::string>* keep = nullptr, PruneReport* pruned = nullptr);
/// The copy's relative paths as a frame body for recv.finish_dir (NUL-separated:
/// a file name may hold any other byte), and back.
std::string encode_keep_list(const std::vector<std::string>& rels);
/// Adds one path to such a body (a sender with 100,000 files writes it straight).
void append_keep_entry(std::string* body, const std::string& rel);
std::vector<std::string> decode_keep_list(const std::string& body);

}  // namespace ferry
