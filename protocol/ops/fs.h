// The file ops of the agent protocol, a host's files read for a copy, a listing
// or a result (transfer/chunk_files.h serves them): one struct per request and per
// reply, each with one field list for both directions in fs.cc, read exactly as
// job.h's are. A relative path is taken beneath the agent's workdir (base/beneath.h).
// A list that grows with the data (a listing's files, a scan's folders, a file's
// chunk hashes) rides in the frame's body (frame.h: move_field_to_body) and is
// back in the header by the time from_json reads it. Plain values; any thread.
//
//   fs.stat FsStatArgs → FsStatReply
//   fs.list FsListArgs → FsListReply, files in the body
//   fs.scan FsScanArgs → FsScanReply, folders in the body (agents/checkpoint_listing.h)
//   fs.read FsReadArgs → FsReadReply, body = the bytes
//   fs.hash FsHashArgs → FsHashReply, chunks in the body
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/status.h"

namespace ferry::protocol {

// The replies, named by their requests (Args::Reply) before they are defined.
struct FsStatReply;
struct FsListReply;
struct FsScanReply;
struct FsReadReply;
struct FsHashReply;

struct FsStatArgs {
  static constexpr const char* kOp = "fs.stat";
  using Reply = FsStatReply;
  std::string path;

  nlohmann::json to_json() const;
  static Result<FsStatArgs> from_json(const nlohmann::json& j);
};

/// One page of a file or folder's files: those after `after`, at most `limit`
/// (none: the agent's page size).
struct FsListArgs {
  static constexpr const char* kOp = "fs.list";
  using Reply = FsListReply;
  std::string path;
  std::string after;
  std::optional<int64_t> limit;

  nlohmann::json to_json() const;
  static Result<FsListArgs> from_json(const nlohmann::json& j);
};

/// A checkpoint watch's shallow, paged listing of `path`'s folders matching `pattern`.
struct FsScanArgs {
  static constexpr const char* kOp = "fs.scan";
  using Reply = FsScanReply;
  std::string path;
  std::string pattern;
  std::string after;
  std::optional<int64_t> max_entries;  // none: the agent's page size

  nlohmann::json to_json() const;
  static Result<FsScanArgs> from_json(const nlohmann::json& j);
};

struct FsReadArgs {
  static constexpr const char* kOp = "fs.read";
  using Reply = FsReadReply;
  std::string path;
  int64_t offset = -1;
  int64_t length = -1;

  nlohmann::json to_json() const;
  static Result<FsReadArgs> from_json(const nlohmann::json& j);
};

/// The hashes of a file's chunks: those of `indices`, or all of them.
struct FsHashArgs {
  static constexpr const char* kOp = "fs.hash";
  using Reply = FsHashReply;
  std::string path;
  int64_t chunk_size = 0;
  std::vector<int64_t> indices;  // rides in the frame's body (frame.h: move_field_to_body)

  nlohmann::json to_json() const;
  static Result<FsHashArgs> from_json(const nlohmann::json& j);
};

/// What a path is, as fs.stat and fs.list say it ("other": a FIFO, a socket, a device).
enum class FsType { kFile, kDir, kOther };
inline constexpr EnumName<FsType> kFsTypeNames[] = {
    {FsType::kFile, "file"}, {FsType::kDir, "dir"}, {FsType::kOther, "other"}};

/// fs.stat's reply: stat(2) of the path, following links; only `exists` and `path`
/// when nothing is there.
struct FsStatReply {
  bool exists = false;
  std::string path;  // as the agent resolved it
  FsType type = FsType::kOther;
  int64_t size = 0;
  int64_t mtime_ms = 0;
  int64_t mtime_ns = 0;  // with ino, the file's version
  int64_t ino = 0;

  nlohmann::json to_json() const;
  static Result<FsStatReply> from_json(const nlohmann::json& j);
};

/// A regular file of a listing, with its version (mtime_ns, ino: -1 when not said).
struct ListedFile {
  std::string path;  // relative to the listed folder; "" for a listed file itself
  int64_t size = 0;
  int mode = 0644;
  int64_t mtime_ns = -1;
  int64_t ino = -1;
};

/// fs.list's reply: one page of a file's or folder's files (transfer/chunk_files.h:
/// list_source_page); `more` when another page follows after the last path.
struct FsListReply {
  FsType type = FsType::kFile;  // kFile or kDir
  std::vector<ListedFile> files;
  bool more = false;

  nlohmann::json to_json() const;
  static Result<FsListReply> from_json(const nlohmann::json& j);
};

/// A file in a scanned folder: "SUB/FILE", or "SUB/SUB/DEEP/" (size -1) for a folder too deep to enter.
struct ScannedFile {
  std::string path;
  int64_t size = 0;
  int64_t mtime_ns = 0;
};

/// A folder fs.scan found: its name, mtime and files (`truncated` when the page ran out inside it).
struct ScannedFolder {
  std::string name;
  int64_t mtime_ns = 0;
  std::vector<ScannedFile> files;
  bool truncated = false;
};

/// fs.scan's reply: the host's clock when it listed, one page of folders, and the
/// name the next page starts after ("" when this was the last).
struct FsScanReply {
  int64_t now_ns = 0;
  std::vector<ScannedFolder> folders;
  std::string next;

  nlohmann::json to_json() const;
  static Result<FsScanReply> from_json(const nlohmann::json& j);
};

/// fs.read's reply: the hash of the bytes in the body, and how many there are.
struct FsReadReply {
  std::string hash;
  int64_t length = 0;

  nlohmann::json to_json() const;
  static Result<FsReadReply> from_json(const nlohmann::json& j);
};

/// fs.hash's reply: the hash of each chunk asked for, by index.
struct FsHashReply {
  std::map<int64_t, std::string> chunks;

  nlohmann::json to_json() const;
  static Result<FsHashReply> from_json(const nlohmann::json& j);
};

}  // namespace ferry::protocol
