// The receiving ops of the agent protocol, a copy's destination side (transfer/
// chunk_files.h says what the receiver guarantees): their requests and replies, one
// struct per message with one field list for both directions in recv.cc, read
// exactly as job.h's are. Plain values; any thread.
//
//   recv.begin       RecvBeginArgs  → RecvBeginReply, have in the body
//   recv.write       RecvWriteArgs, body = the chunk → {}  (kDataLoss if the hash differs)
//   recv.commit      RecvCommitArgs → RecvCommitReply, bad in the body
//   recv.prepare_dir RecvPrepareDirArgs, body = the copy's files → {}
//   recv.finish_dir  RecvFinishDirArgs, body = the files kept → {} or what the prune removed
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ferry::protocol {

// The replies, named by their requests (Args::Reply) before they are defined.
struct RecvBeginReply;
struct RecvCommitReply;

struct RecvBeginArgs {
  static constexpr const char* kOp = "recv.begin";
  using Reply = RecvBeginReply;
  std::string dest;
  int64_t size = -1;
  int64_t chunk_size = 0;
  int mode = 0644;
  std::string file_hash;  // "": not known yet
  std::string owner;      // "": the agent's user (transfer/copy_plan.h)

  nlohmann::json to_json() const;
  static Result<RecvBeginArgs> from_json(const nlohmann::json& j);
};

/// recv.begin's reply: whether the destination holds exactly these bytes already,
/// and the verified chunks its part file holds, by index.
struct RecvBeginReply {
  bool complete = false;
  std::map<int64_t, std::string> have;  // rides in the frame's body

  nlohmann::json to_json() const;
  static Result<RecvBeginReply> from_json(const nlohmann::json& j);
};

struct RecvWriteArgs {
  static constexpr const char* kOp = "recv.write";
  std::string dest;
  int64_t index = -1;
  int64_t chunk_size = 0;
  std::string hash;
  std::string owner;

  nlohmann::json to_json() const;
  static Result<RecvWriteArgs> from_json(const nlohmann::json& j);
};

struct RecvCommitArgs {
  static constexpr const char* kOp = "recv.commit";
  using Reply = RecvCommitReply;
  std::string dest;
  int64_t chunk_size = 0;
  std::vector<std::string> chunks;  // every chunk's hash; rides in the frame's body
  std::string owner;

  nlohmann::json to_json() const;
  static Result<RecvCommitArgs> from_json(const nlohmann::json& j);
};

/// recv.commit's reply: committed, or the chunks found bad on the destination's
/// disk (sent again by the sender) and why.
struct RecvCommitReply {
  bool committed = false;
  std::vector<int64_t> bad;  // rides in the frame's body
  std::string error;

  nlohmann::json to_json() const;
  static Result<RecvCommitReply> from_json(const nlohmann::json& j);
};

struct RecvPrepareDirArgs {
  static constexpr const char* kOp = "recv.prepare_dir";
  std::string path;
  bool record = false;  // the body's files are recorded as the copy's before any is written

  nlohmann::json to_json() const;
  static Result<RecvPrepareDirArgs> from_json(const nlohmann::json& j);
};

struct RecvFinishDirArgs {
  static constexpr const char* kOp = "recv.finish_dir";
  std::string path;
  std::string manifest_hash;
  bool prune = false;  // what the copy did not send goes (the body lists what stays)

  nlohmann::json to_json() const;
  static Result<RecvFinishDirArgs> from_json(const nlohmann::json& j);
};

}  // namespace ferry::protocol
