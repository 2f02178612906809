// The file ops of the agent protocol, a host's files read for a copy, a listing
// or a result (transfer/chunk_files.h serves them): their requests, one struct per
// op with one field list for both directions in fs.cc, read exactly as job.h's
// are. A relative path is taken beneath the agent's workdir (base/beneath.h).
// Plain values; any thread.
//
//   fs.stat FsStatArgs → {exists, type, size, mtime_ms, mtime_ns, ino}
//   fs.list FsListArgs → {type, files: [{path, size, mode, mtime_ns, ino}], more}
//   fs.scan FsScanArgs → {now_ns, folders, next} (agents/checkpoint_listing.h)
//   fs.read FsReadArgs → {hash, length}, body = the bytes
//   fs.hash FsHashArgs → {chunks: {index: hash}}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ferry::protocol {

struct FsStatArgs {
  std::string path;

  nlohmann::json to_json() const;
  static Result<FsStatArgs> from_json(const nlohmann::json& j);
};

/// One page of a file or folder's files: those after `after`, at most `limit`
/// (none: the agent's page size).
struct FsListArgs {
  std::string path;
  std::string after;
  std::optional<int64_t> limit;

  nlohmann::json to_json() const;
  static Result<FsListArgs> from_json(const nlohmann::json& j);
};

/// A checkpoint watch's shallow, paged listing of `path`'s folders matching `pattern`.
struct FsScanArgs {
  std::string path;
  std::string pattern;
  std::string after;
  std::optional<int64_t> max_entries;  // none: the agent's page size

  nlohmann::json to_json() const;
  static Result<FsScanArgs> from_json(const nlohmann::json& j);
};

struct FsReadArgs {
  std::string path;
  int64_t offset = -1;
  int64_t length = -1;

  nlohmann::json to_json() const;
  static Result<FsReadArgs> from_json(const nlohmann::json& j);
};

/// The hashes of a file's chunks: those of `indices`, or all of them.
struct FsHashArgs {
  std::string path;
  int64_t chunk_size = 0;
  std::vector<int64_t> indices;  // rides in the frame's body (frame.h: move_field_to_body)

  nlohmann::json to_json() const;
  static Result<FsHashArgs> from_json(const nlohmann::json& j);
};

}  // namespace ferry::protocol
