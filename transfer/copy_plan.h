// What both copy senders share — the relay (jobs/copy/relay_copy.h,
// the coordinator moving bytes between two agents) and the direct push
// (agents/push.h, the source host's own agent sending over its own ssh): the
// files of a copy and where each lands, the chunking, the manifest, and the
// receiver protocol's messages (recv.begin / recv.write / recv.commit and their
// replies; chunk_files.h is the receiver itself).
//
// The two senders drive these differently (the relay asynchronously over the
// coordinator's lanes, the push with one blocking loop per ssh stream), so what
// is shared is the data and the messages, not the event loop: a change to the
// receiver protocol is made here once. Plain values and pure functions; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "protocol/ops/fs.h"
#include "protocol/ops/recv.h"

namespace ferry {

/// What every file of one copy shares: where it comes from and goes, and whose
/// lease it takes on the destination ("<job> <attempt> <token>"; chunk_files.h).
struct CopyRoots {
  std::string from, to;
  bool is_dir = false;
  std::string owner;
};

/// One file of a copy, as a sender tracks it.
struct CopyFile {
  std::shared_ptr<const CopyRoots> roots;  // the copy's; set by plan_copy
  std::string rel;                         // relative to the copied folder; "" for a single file
  // Full paths as the source and the destination agents resolve them, made when
  // asked: a folder of 100,000 files does not hold 200,000 more paths.
  std::string src() const;
  std::string dest() const;
  const std::string& owner() const;
  int64_t size = 0;
  int mode = 0644;
  int64_t mtime_ns = -1;  // the source's version when listed (-1: the agent did not say)
  int64_t ino = -1;
  int64_t chunks = 0;
  std::vector<std::string> hashes;           // per chunk, from the source, as they become known
  std::map<int64_t, std::string> dest_have;  // verified at the destination
  int64_t remaining = 0;                     // chunks not yet everywhere
  bool committed = false;
  bool dest_complete = false;  // the destination already holds exactly these bytes
};

/// A copy's lease name on its destination files: "<job> <attempt> <token>".
std::string copy_owner(const std::string& job, int attempt, const std::string& token);

/// How the source's file differs now (an fs.stat reply) from when it was listed:
/// "" when it is the same version (size, mtime to the ns, inode).
std::string source_change(const protocol::FsStatReply& now, const CopyFile& f);

/// A copy's files from the source's listing (as list_source() and the agent's
/// fs.list, all its pages, give it).
struct CopyListing {
  bool is_dir = false;
  std::vector<CopyFile> files;
  int64_t bytes_total = 0;
};
/// Refuses (kDataLoss, naming `from`) a listing whose shape is wrong, whose sizes are
/// impossible, or whose folder entries are not plain relative paths inside the copy:
/// the listing is the source host's word, and a path from it becomes a path to write.
/// The listing is taken by value: moved in, each file's path is moved out as it is planned.
Result<CopyListing> plan_copy(protocol::FsListReply listing, const std::string& from, const std::string& to,
                              int64_t chunk_size, const std::string& owner = "");
/// plan_copy handing each file to `take` as it is planned instead of holding them
/// (*out gets the rest): the caller's own file list is the only one.
Status plan_copy_each(protocol::FsListReply listing, const std::string& from, const std::string& to, int64_t chunk_size,
                      const std::string& owner, CopyListing* out, const std::function<void(CopyFile&&)>& take);
/// A file of a copy larger than this (1 PiB) is a faulty listing, not a file.
inline constexpr int64_t kMaxCopyFileBytes = int64_t{1} << 50;
/// The most chunks one copy may need (8 TiB at 2 MiB chunks): the coordinator holds
/// every chunk's hash, so a listing's sizes must not be what sizes its memory.
inline constexpr int64_t kMaxCopyChunks = int64_t{1} << 22;
/// OK when `rel` is non-empty, relative, and has no empty, "." or ".." component.
Status check_copy_rel(const std::string& rel);
/// Takes the source's fs.hash reply (a hash for every chunk) into f->hashes;
/// refuses one that does not name exactly the file's chunks.
Status take_chunk_hashes(const std::map<int64_t, std::string>& chunks, CopyFile* f);

/// Where `rel` of a copy from `from` lands under `to` (a folder copy keeps its
/// layout; a single file copied to "DIR/" keeps its name).
std::string copy_dest_for(const std::string& to, const std::string& from, const std::string& rel, bool is_dir);

/// Bytes in chunk `index` of a file of `size` bytes.
int64_t copy_chunk_len(int64_t size, int64_t chunk_size, int64_t index);

/// The manifest of a finished copy (each file's path, size and hash) and its
/// hash: the `manifest_hash` output and what the completion marker holds.
std::string copy_manifest_hash(const std::vector<CopyFile>& files);

/// Whether an fs.stat reply of the destination says a file of `size` bytes is
/// already there under its final name — then the source is hashed up front so
/// an identical file can be skipped whole.
bool dest_may_hold(const protocol::FsStatReply& dest, int64_t size);

/// Drops chunks from `have` whose hash differs from the source's (`source`
/// holds the source's hashes of some indices): a chunk held from an earlier
/// attempt counts only if the source still has the same bytes.
void drop_stale_chunks(std::map<int64_t, std::string>* have, const std::map<int64_t, std::string>& source);

// Resume, the same for both senders: stat the destination; when it may hold the
// file (dest_may_hold) hash the source first; recv.begin; then drop the held
// chunks the source no longer has (all of them checked against source_hashes
// when the source was hashed, else the held_indices hashed at the source), and
// queue what each receiver lacks (queue_missing_chunks).

/// Every chunk's source hash by index, once f.hashes are all known.
std::map<int64_t, std::string> source_hashes(const CopyFile& f);
/// The chunk indices any of `haves` holds: those to hash at the source before they count.
std::vector<int64_t> held_indices(std::initializer_list<const std::map<int64_t, std::string>*> haves);
/// Calls `queue(index)` for each chunk of `f` some receiver lacks (`lacks(index)`)
/// and counts it in f->remaining; a chunk every receiver holds takes the held hash
/// (dest_have) as the source's and is not sent. Returns the bytes already there.
int64_t queue_missing_chunks(CopyFile* f, int64_t chunk_size, const std::function<bool(int64_t)>& lacks,
                             const std::function<void(int64_t)>& queue);

/// The bytes the files of a listing hold, read defensively (a host's word):
/// negative sizes count 0, and the sum saturates.
int64_t listed_bytes(const protocol::FsListReply& listing);

// The receiver protocol (agent_server.h lists the ops).
nlohmann::json recv_begin_args(const CopyFile& f, int64_t chunk_size, const std::string& file_hash);
/// Takes a recv.begin reply: dest_complete and dest_have (all chunks when complete;
/// an index outside the file is not taken).
void apply_recv_begin(CopyFile* f, const protocol::RecvBeginReply& reply);
nlohmann::json recv_write_args(const CopyFile& f, int64_t index, int64_t chunk_size, const std::string& hash);
/// recv.commit's arguments; the file's chunk hashes go to *body (a 64 GiB file has
/// 32,768 of them, more than the header may hold: protocol::move_field_to_body).
Result<nlohmann::json> recv_commit_args(const CopyFile& f, int64_t chunk_size, std::string* body);
/// fs.hash's arguments for `indices` of the source file (all when empty); the
/// indices go to *body.
Result<nlohmann::json> fs_hash_args(const CopyFile& f, int64_t chunk_size, const std::vector<int64_t>& indices,
                                    std::string* body);
/// The chunks of `f` a recv.commit reply says failed on the destination's disk
/// (empty: committed; all of them when not committed and none of the file's is named).
std::vector<int64_t> recv_commit_bad(const protocol::RecvCommitReply& reply, const CopyFile& f);

}  // namespace ferry
