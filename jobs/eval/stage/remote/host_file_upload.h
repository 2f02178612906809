// HostFileUpload: puts one coordinator file on a host through its agent's
// receiver (recv.begin / recv.write / recv.commit, transfer/chunk_files.h), so the
// host ends with the file whole and verified chunk by chunk, or without it. A
// host that already holds exactly these bytes (same file hash) gets nothing sent.
// Used to ship the eval worker (by hash, like the agent) and coordinator prompts.
//
// Transient failures (host not connected now) are retried every kRetryMs; other
// errors end the upload with the reason. io thread only; keeps itself alive
// while calls are pending.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jobs/stage_runner.h"

namespace ferry {

struct HostFile {
  std::string local;  // the coordinator's file
  std::string host;
  std::string dest;  // on the host (relative: to its workdir)
  int mode = 0644;
};

class HostFileUpload : public std::enable_shared_from_this<HostFileUpload> {
 public:
  static constexpr int64_t kChunkBytes = 4 << 20;
  static constexpr int kRetryMs = 1000;
  static constexpr int kMaxRecommits = 3;
  static constexpr int kMaxRestarts = 3;

  /// The file's hash as the receiver computes it (XXH3-128 of its chunk hashes),
  /// read from the coordinator's disk; names a worker's install folder.
  static Result<std::string> file_hash(const std::string& local);

  HostFileUpload(StageEnv& env, HostFile file);
  /// `done(status, sent_bytes)`; called once on the io thread.
  void start(std::function<void(Status, int64_t)> done);
  /// Stops after the call in flight; `done` is not called.
  void abandon() { abandoned_ = true; }

 private:
  void begin();
  void send(size_t index);
  void commit();
  void begin_again(const Status& why);
  void retry(std::function<void()> fn);
  void finish(Status s);

  StageEnv& env_;
  HostFile file_;
  std::function<void(Status, int64_t)> done_;
  int64_t size_ = 0;
  std::vector<std::string> hashes_;
  std::vector<bool> have_;
  int64_t sent_ = 0;
  int recommits_ = 0;
  int restarts_ = 0;
  bool abandoned_ = false;
};

}  // namespace ferry
