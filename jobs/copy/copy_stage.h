// CopyStage: moves a file or a checkpoint folder from one host to another,
// chunked, verified, resumable, in bounded memory (DESIGN §3 step 4), either
// relayed through the coordinator or direct from host to host.
//
// Route. `relay` always relays. `direct` sends host to host: the source host's
// agent runs `ferry-agent push` (agents/push.h) as a detached job — through a
// CommandStage, so it is started, followed, re-attached after a drop or by
// `ferry resume`, and cancelled exactly like a command — and the push's progress
// lines (transfer/push_progress.h) become this stage's progress. It needs both
// hosts on ssh and the source reaching the destination's address:port, which
// the source's agent probes first (net.probe); otherwise it fails naming both.
// `auto` is direct when that probe succeeds and relay otherwise, and relays
// whenever keep_local is set (the coordinator needs the bytes then). The choice
// and its reason are recorded in the copy.started event. Both routes use the
// same plan, messages and receiver (transfer/copy_plan.h, transfer/chunk_files.h),
// so either resumes what the other left.
//
// Relay data path per lane (a pair of extra connections, one to each host, each with
// its own SSH session and thread so the ciphers use more than one core):
//   fs.read on the source lane  →  recv.write on the destination lane
// with up to kChunksPerLane chunks per lane at a time: the source reads ahead
// while the destination writes, but each lane has at most one recv.write in
// flight. So memory is bounded by about lanes × kChunksPerLane × chunk_size (plus
// the transports' buffers) whatever the size of the files, and a dropped
// destination link costs at most the one chunk being written on each lane (a
// lane that loses its link gives its chunks back to the queue). Chunks the
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
#include "transfer/copy_plan.h"

namespace ferry {

class CommandStage;
struct PushProgress;

struct CopySpec {
  std::string from_host, from_path;  // path as the source agent resolves it
  std::string to_host, to_path;
  std::string keep_local;            // coordinator path ("" = none), already resolved
  std::string route = "auto";        // auto | direct | relay
  int streams = 4;
  int64_t chunk_size = 2 << 20;
  // For the direct route: both hosts on ssh, and how the source reaches the destination.
  bool from_ssh = false, to_ssh = false;
  std::string to_address;
  int to_port = 22;
  std::string to_user;
  double give_up_s = 600;  // the push's patience without the destination
  AttemptId attempt;       // the push is a job of this attempt on the source host
};

class CopyStage : public StageRunner, public std::enable_shared_from_this<CopyStage> {
 public:
  CopyStage(StageEnv& env, CopySpec spec);
  ~CopyStage() override;
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;

  static constexpr int kRetryMs = 1000;
  static constexpr int kProgressEveryMs = 500;
  static constexpr int kMaxCorruptRetries = 5;
  static constexpr int kProbeTimeoutMs = 3000;
  /// Chunks a relay lane holds at once (reading, read, writing): reads run ahead of
  /// the one write, and memory stays about lanes × kChunksPerLane × chunk_size.
  static constexpr int kChunksPerLane = 3;

 private:
  class PushEnv;
  struct File : CopyFile {
    std::string local;                          // keep_local's full path ("" = none)
    std::map<int64_t, std::string> local_have;  // verified in keep_local
    bool local_complete = false;                // keep_local already holds exactly these bytes
  };
  struct Chunk {
    size_t file;
    int64_t index;
  };
  struct Ready {  // read from the source, not yet handed to the destination
    Chunk chunk;
    std::string data, hash;
  };
  struct Lane {
    int reads = 0;               // fs.read requests in flight
    std::deque<Ready> ready;     // read, waiting for this lane's destination link
    bool writing = false;        // a recv.write in flight (never more than one)
    bool source_paused = false;  // the source lane failed; a retry is scheduled
    bool dest_paused = false;    // the destination lane failed; await_dest_lane runs
  };

  void list_source();
  void decide_route();
  void warm_lanes();
  void ask_hosts();
  void find_push();
  void probe_route();
  void choose(const std::string& route, const std::string& reason);
  void start_relay();
  void start_push(bool reattach);
  void on_push_line(const std::string& line);
  void on_push_done(StageOutcome o);
  void begin_files(size_t i);
  void begin_receivers(size_t i, const std::string& file_hash);
  void check_held(size_t i, bool hashes_known);
  void lane_loop(int lane);
  void pump_writes(int lane);
  void write_chunk(int lane, Chunk c, std::string data, std::string hash);
  void chunk_done(int lane, Chunk c);
  void await_dest_lane(int lane);
  void wake_other_lanes(int lane);  // chunks came back to the queue
  Lane& lane_state(int lane);       // lanes are numbered from 1
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
  bool lanes_warm_ = false;
  std::string route_, route_reason_;
  // Direct route: the agents' own paths (hello) and the push's job.
  std::string src_exe_, src_workdir_, dest_exe_, dest_workdir_;
  std::unique_ptr<PushEnv> push_env_;
  std::shared_ptr<CommandStage> push_;
  std::string push_error_;      // the push's own `ferry-push error:` line
  double push_rate_ = 0;        // bytes/s, as the push measures it
  double push_seconds_ = 0;
  std::vector<File> files_;
  std::deque<Chunk> queue_;
  std::map<std::pair<size_t, int64_t>, int> corrupt_retries_;
  int lanes_ = 1;
  std::vector<Lane> lane_states_;
  int64_t bytes_total_ = 0;
  int64_t bytes_done_ = 0;   // reached every destination
  int64_t bytes_sent_ = 0;   // written to the destination host, counting re-sends
  int64_t bytes_resent_ = 0;
  int64_t bytes_skipped_ = 0;
  int64_t started_ms_ = 0;
  size_t files_committed_ = 0;
};

}  // namespace ferry
