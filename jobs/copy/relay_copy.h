// RelayCopy: the relay route of a copy stage (copy_stage.h), the coordinator
// moving the bytes between the two hosts' agents over parallel lanes.
//
// Data path per lane (a pair of extra streams, one to each host, each a channel of
// that host's one SSH session to an agent of its own; a lane opens no login shell:
// it reaches its host's main agent through that agent's lanes socket, see
// orchestrator/hosts/host_connection.h and hosts/ssh/ssh_transport.h, so a host's rc runs once
// per run and a host holds one connection however many lanes):
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

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jobs/copy/copy_context.h"
#include "transfer/copied_files.h"

namespace ferry {

class RelayCopy : public std::enable_shared_from_this<RelayCopy> {
 public:
  static constexpr int kMaxCorruptRetries = 5;
  /// Chunks a relay lane holds at once (reading, read, writing): reads run ahead of
  /// the one write, and memory stays about lanes × kChunksPerLane × chunk_size.
  static constexpr int kChunksPerLane = 3;

  explicit RelayCopy(std::shared_ptr<CopyContext> c) : c_(std::move(c)) {}
  /// Sends every file of the context's listing; ends the copy through c->finish.
  void start() { start_relay(); }
  /// Brings every data lane up now, before the listing is back: a lane's channel and
  /// agent take a round trip or two each, and the first chunks should not wait for them.
  static void warm_lanes(CopyContext& c);

 private:
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

  /// Files being begun at once, per lane (the round trips of the next ones overlap).
  static constexpr int kBeginsPerLane = 4;

  void start_relay();
  void begin_more();         // begins files up to kBeginsPerLane per lane
  void begin_file(size_t i);
  void file_begun();
  void all_begun();          // queues what each side lacks and starts the lanes
  int lane_of_file(size_t i) const;  // the lane a file's begin and commit use
  void begin_receivers(size_t i, const std::string& file_hash);
  void check_held(size_t i, bool hashes_known);
  void lane_loop(int lane);
  void pump_writes(int lane);
  void write_chunk(int lane, Chunk c, std::string data, std::string hash);
  void chunk_done(int lane, Chunk c);
  void await_dest_lane(int lane);
  void wake_other_lanes(int lane);  // chunks came back to the queue
  Lane& lane_state(int lane);       // lanes are numbered from 1
  void note_pruned(const std::string& where, const PruneReport& r);  // events + lines
  void commit_file(size_t i);    // checks the source still has the listed version, then:
  void commit_checked(size_t i);  // commits keep_local and the destination
  void file_committed(size_t i);
  void finish_folder();
  int64_t chunk_len(const CopyEntry& f, int64_t index) const;

  std::shared_ptr<CopyContext> c_;
  std::deque<Chunk> queue_;
  std::map<std::pair<size_t, int64_t>, int> corrupt_retries_;
  std::vector<Lane> lane_states_;
  size_t next_to_begin_ = 0, files_begun_ = 0;
  int begins_in_flight_ = 0;
  size_t files_committed_ = 0;
  bool said_waiting_ = false;  // another copy held the destination (said once)
  bool local_finished_ = false;  // keep_local marked complete (a retry of the destination's finish skips it)
};

}  // namespace ferry
