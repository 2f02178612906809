// CopyStage: moves a file or a checkpoint folder from one host to another,
// relayed through the coordinator, chunked, verified, resumable, in bounded
// memory (DESIGN §3 step 4).
//
// Data path per lane (a pair of extra connections, one to each host, each with
// its own SSH session and thread so the ciphers use more than one core):
//   fs.read on the source lane  →  recv.write on the destination lane
// with one chunk per lane at a time (reads and writes overlap across lanes), so
// memory is bounded by about lanes × chunk_size (plus the transports' buffers)
// whatever the size of the files, and a dropped link costs at most the one chunk
// that was in flight on each lane. Chunks the
// destination already holds (recv.begin reports them, re-verified) are not sent
// again, so a new attempt or `ferry resume` continues where the last one ended.
// A file already at its final name with the same size is hashed at the source;
// when the destination (or keep_local) holds exactly those bytes it is skipped
// whole, so a second run to the same place sends nothing.
// `keep_local` writes every relayed byte on the coordinator too, with the same
// receiver code, so an in-process eval can start as soon as the copy ends.
//
// io thread only (see stage_runner.h).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <set>

#include "jobs/stage_runner.h"

namespace ferry {

struct CopySpec {
  std::string from_host, from_path;  // path as the source agent resolves it
  std::string to_host, to_path;
  std::string keep_local;            // coordinator path ("" = none), already resolved
  std::string route = "auto";        // auto | direct | relay
  int streams = 4;
  int64_t chunk_size = 2 << 20;
};

class CopyStage : public StageRunner, public std::enable_shared_from_this<CopyStage> {
 public:
  CopyStage(StageEnv& env, CopySpec spec);
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;

  static constexpr int kRetryMs = 1000;
  static constexpr int kProgressEveryMs = 500;
  static constexpr int kMaxCorruptRetries = 5;

 private:
  struct File {
    std::string rel;
    std::string src, dest, local;  // full paths
    int64_t size = 0;
    int mode = 0644;
    int64_t chunks = 0;
    std::vector<std::string> hashes;            // from the source, as chunks are read
    std::map<int64_t, std::string> dest_have;   // verified at the destination
    std::map<int64_t, std::string> local_have;  // verified in keep_local
    int64_t remaining = 0;                      // chunks not yet everywhere
    bool committed = false;
    bool skipped = false;
    bool dest_complete = false;   // the destination already holds exactly these bytes
    bool local_complete = false;  // so does keep_local
  };
  struct Chunk {
    size_t file;
    int64_t index;
  };

  void list_source();
  void decide_route();
  void begin_files(size_t i);
  void begin_receivers(size_t i, const std::string& file_hash);
  void check_held(size_t i, bool hashes_known);
  void lane_loop(int lane);
  void write_chunk(int lane, Chunk c, std::string data, std::string hash);
  void chunk_done(int lane, Chunk c);
  void await_dest_lane(int lane);
  void commit_file(size_t i);
  void finish_folder();
  void retry_later(std::function<void()> fn);
  void report_progress();
  void fail(const std::string& why);
  void succeed_with(StageOutcome o);
  void finish(StageOutcome o);
  bool transient(const Status& s) const;
  int64_t chunk_len(const File& f, int64_t index) const;

  StageEnv& env_;
  CopySpec spec_;
  std::function<void(StageOutcome)> done_;
  boost::asio::steady_timer progress_timer_;
  bool finished_ = false;
  bool cancelled_ = false;
  bool is_dir_ = false;
  std::string route_;
  std::vector<File> files_;
  std::deque<Chunk> queue_;
  std::map<std::pair<size_t, int64_t>, int> corrupt_retries_;
  int lanes_ = 1;
  int lanes_idle_ = 0;
  int64_t bytes_total_ = 0;
  int64_t bytes_done_ = 0;   // reached every destination
  int64_t bytes_sent_ = 0;   // written to the destination host, counting re-sends
  int64_t bytes_resent_ = 0;
  int64_t bytes_skipped_ = 0;
  int64_t started_ms_ = 0;
  size_t files_committed_ = 0;
};

}  // namespace ferry
