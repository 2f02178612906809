#include "jobs/copy/relay_copy.h"

#include <sys/stat.h>

#include "base/byte_size.h"
#include "jobs/agent_call.h"
#include "protocol/ops/fs.h"
#include "protocol/ops/recv.h"
#include "transfer/chunk_files.h"
#include "transfer/copy_manifest.h"

namespace ferry {

void RelayCopy::warm_lanes(CopyContext& c) {
  if (c.lanes_warm) return;
  c.lanes_warm = true;
  for (int lane = 1; lane <= c.lanes; ++lane) {
    for (const auto& host : {c.spec.copy.from_host, c.spec.copy.to_host}) {
      c.env.call_agent_lane(host, lane, "ping", nlohmann::json::object(), {}, [](Result<protocol::Frame>) {});
    }
  }
  // The destination's main link too: its first use comes only after the listing.
  c.env.call_agent(c.spec.copy.to_host, "ping", nlohmann::json::object(), [](Result<protocol::Frame>) {});
}

void RelayCopy::start_relay() {
  warm_lanes(*c_);
  auto self = shared_from_this();
  auto begin = [self] { self->begin_more(); };
  if (!c_->is_dir) return begin();
  // The copy's files are recorded as ferry's before any is written: what a later
  // copy may prune (transfer/copied_files.h).
  std::vector<std::string> rels = c_->file_rels();
  if (!c_->spec.copy.keep_local.empty()) {
    Status s = check_folder_copy_root(c_->spec.copy.keep_local);
    if (s.ok()) s = receive_prepare_dir(c_->spec.copy.keep_local, &rels);
    if (!s.ok()) return c_->fail("keep_local: " + s.message());
  }
  nlohmann::json args = protocol::RecvPrepareDirArgs{c_->spec.copy.to, true}.to_json();
  c_->env.call_agent_lane(c_->spec.copy.to_host, 0, protocol::RecvPrepareDirArgs::kOp, args, encode_keep_list(rels),
                          [self, begin](Result<protocol::Frame> r) {
                            if (self->c_->finished) return;
                            if (!r.ok()) {
                              if (transient_link_failure(r.status()))
                                return self->c_->retry_later([self] { self->start_relay(); });
                              return self->c_->fail("preparing " + self->c_->spec.copy.to_host + ":" +
                                                    self->c_->spec.copy.to + ": " + r.status().message());
                            }
                            begin();
                          });
}

// Files are begun a few per lane at once, each on a lane of its own (the lanes
// are agents of their own): one file after another, a folder of 100,000 small
// files spent most of its time waiting for two round trips per file.
void RelayCopy::begin_more() {
  if (c_->files.empty()) return all_begun();
  while (!c_->finished && begins_in_flight_ < kBeginsPerLane * std::max(1, c_->lanes) &&
         next_to_begin_ < c_->files.size()) {
    ++begins_in_flight_;
    begin_file(next_to_begin_++);
  }
}

void RelayCopy::file_begun() {
  --begins_in_flight_;
  if (++files_begun_ == c_->files.size()) return all_begun();
  begin_more();
}

int RelayCopy::lane_of_file(size_t i) const {
  return c_->lanes > 0 ? 1 + static_cast<int>(i % static_cast<size_t>(c_->lanes)) : 0;
}

void RelayCopy::all_begun() {
  // Everything each side lacks goes in one queue, so lanes work across files.
  for (size_t fi = 0; fi < c_->files.size(); ++fi) {
    CopyEntry& f = c_->files[fi];
    auto lacks = [&f](int64_t c) { return !f.dest_have.count(c) || (!f.local.empty() && !f.local_have.count(c)); };
    int64_t there = queue_missing_chunks(&f, c_->spec.chunk_size, lacks, [this, fi](int64_t c) {
      queue_.push_back({fi, c});
    });
    c_->bytes.skipped += there;
    c_->bytes.done += there;
  }
  if (c_->bytes.skipped > 0) {
    int64_t whole = 0;
    for (const auto& f : c_->files) whole += f.dest_complete && (f.local.empty() || f.local_complete);
    c_->env.record_event("copy.resumed", {{"bytes_already_there", c_->bytes.skipped}, {"files_already_there", whole}});
    c_->log_relay("already there: " + byte_size(static_cast<double>(c_->bytes.skipped)) + ", " + std::to_string(whole) +
                  " of " + std::to_string(c_->files.size()) + " files whole");
  }
  bool any = false;
  for (size_t fi = 0; fi < c_->files.size(); ++fi) {
    if (c_->files[fi].remaining == 0) commit_file(fi);
    else any = true;
  }
  if (any) {
    for (int lane = 1; lane <= c_->lanes; ++lane) lane_loop(lane);
  }
}

void RelayCopy::begin_file(size_t i) {
  // A file already at its final name with the same size may be identical: then
  // the source's whole-file hash lets each receiver skip it. Only then is the
  // source hashed up front; a fresh copy costs one stat.
  CopyEntry& f = c_->files[i];
  auto self = shared_from_this();
  if (f.size == 0) return begin_receivers(i, "");
  call_op_lane(
      c_->env, c_->spec.copy.to_host, lane_of_file(i), protocol::FsStatArgs{f.dest()}, {},
      [self, i](Result<protocol::FsStatReply> dest) {
        if (self->c_->finished) return;
        if (!dest.ok()) {
          if (transient_link_failure(dest.status())) return self->c_->retry_later([self, i] { self->begin_file(i); });
          return self->c_->fail(self->c_->spec.copy.to_host + ":" + self->c_->files[i].dest() + ": " +
                                dest.status().message());
        }
        CopyEntry& f = self->c_->files[i];
        bool dest_same = dest_may_hold(*dest, f.size);
        struct stat st;
        bool local_same =
            !f.local.empty() && ::stat(f.local.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == f.size;
        if (!dest_same && !local_same) return self->begin_receivers(i, "");
        std::string indices;
        auto hargs = fs_hash_args(f, self->c_->spec.chunk_size, {}, &indices);
        if (!hargs.ok()) return self->c_->fail(hargs.status().message());
        self->c_->env.call_agent_lane(
            self->c_->spec.copy.from_host, 0, protocol::FsHashArgs::kOp, *hargs, std::move(indices),
            read_reply_of<protocol::FsHashArgs>([self, i](Result<protocol::FsHashReply> hashes) {
              if (self->c_->finished) return;
              if (!hashes.ok()) {
                if (transient_link_failure(hashes.status()))
                  return self->c_->retry_later([self, i] { self->begin_file(i); });
                return self->c_->fail("hashing source " + self->c_->files[i].src() + ": " + hashes.status().message());
              }
              CopyEntry& f = self->c_->files[i];
              Status taken = take_chunk_hashes(hashes->chunks, &f);
              if (!taken.ok())
                return self->c_->fail("source host " + self->c_->spec.copy.from_host + ": " + taken.message());
              self->begin_receivers(i, file_hash_of(f.hashes));
            }));
      });
}

void RelayCopy::begin_receivers(size_t i, const std::string& file_hash) {
  CopyEntry& f = c_->files[i];
  if (!f.local.empty()) {
    auto local = receive_begin(f.local, f.size, c_->spec.chunk_size, f.mode, file_hash);
    if (!local.ok()) return c_->fail("keep_local " + f.local + ": " + local.status().message());
    f.local_complete = local->complete;
    f.local_have = local->have;
  }
  auto self = shared_from_this();
  nlohmann::json args = recv_begin_args(f, c_->spec.chunk_size, file_hash);
  c_->env.call_agent_lane(
      c_->spec.copy.to_host, lane_of_file(i), protocol::RecvBeginArgs::kOp, args, {},
      read_reply_of<protocol::RecvBeginArgs>([self, i, known = !file_hash.empty()](Result<protocol::RecvBeginReply> r) {
        if (self->c_->finished) return;
        if (!r.ok()) {
          if (transient_link_failure(r.status())) {
            if (r.status().message().find(kDestBusy) != std::string::npos && !self->said_waiting_) {
              self->said_waiting_ = true;
              self->c_->env.note("waiting: " + r.status().message());
              self->c_->log_relay("waiting: " + r.status().message());
              self->c_->env.record_event("copy.waiting_for_destination", {{"why", r.status().message()}});
            }
            return self->c_->retry_later([self, i] { self->begin_file(i); });
          }
          return self->c_->fail(self->c_->spec.copy.to_host + ":" + self->c_->files[i].dest() + ": " +
                                r.status().message());
        }
        CopyEntry& f = self->c_->files[i];
        apply_recv_begin(&f, *r);
        for (int64_t c = 0; c < f.chunks && f.local_complete; ++c) f.local_have[c] = f.hashes[static_cast<size_t>(c)];
        self->check_held(i, known);
      }));
}

void RelayCopy::check_held(size_t i, bool hashes_known) {
  CopyEntry& f = c_->files[i];
  // Chunks held from an earlier attempt count only if the source still has the same bytes.
  auto drop_stale = [&f](const std::map<int64_t, std::string>& src) {
    drop_stale_chunks(&f.dest_have, src);
    drop_stale_chunks(&f.local_have, src);
  };
  if (hashes_known) {
    drop_stale(source_hashes(f));
    return file_begun();
  }
  std::vector<int64_t> held = held_indices({&f.dest_have, &f.local_have});
  if (held.empty()) return file_begun();
  auto self = shared_from_this();
  std::string indices;
  auto hargs = fs_hash_args(f, c_->spec.chunk_size, held, &indices);
  if (!hargs.ok()) return c_->fail(hargs.status().message());
  c_->env.call_agent_lane(
      c_->spec.copy.from_host, 0, protocol::FsHashArgs::kOp, *hargs, std::move(indices),
      read_reply_of<protocol::FsHashArgs>([self, i, drop_stale](Result<protocol::FsHashReply> hashes) {
        if (self->c_->finished) return;
        if (!hashes.ok()) {
          if (transient_link_failure(hashes.status())) return self->c_->retry_later([self, i] { self->begin_file(i); });
          return self->c_->fail("hashing source " + self->c_->files[i].src() + ": " + hashes.status().message());
        }
        drop_stale(hashes->chunks);
        self->file_begun();
      }));
}

// Per lane: up to kChunksPerLane chunks held at once — fs.read requests in flight
// on the source lane, chunks read and waiting, and at most ONE recv.write in flight
// on the destination lane, so a cut destination link costs at most one chunk per
// lane, while reads from the source overlap writes to the destination.
void RelayCopy::lane_loop(int lane) {
  if (c_->finished || c_->cancelled) return;
  Lane& l = lane_state(lane);
  while (!l.source_paused && !l.dest_paused && !queue_.empty() &&
         l.reads + static_cast<int>(l.ready.size()) + (l.writing ? 1 : 0) < kChunksPerLane) {
    Chunk c = queue_.front();
    queue_.pop_front();
    ++l.reads;
    const CopyEntry& f = c_->files[c.file];
    auto self = shared_from_this();
    nlohmann::json args = protocol::FsReadArgs{f.src(), c.index * c_->spec.chunk_size, chunk_len(f, c.index)}.to_json();
    const std::string& from_host = c_->spec.copy.from_host;
    c_->env.call_agent_lane(
        from_host, lane, protocol::FsReadArgs::kOp, args, {}, [self, lane, c](Result<protocol::Frame> r) {
          if (self->c_->finished) return;
          Lane& l = self->lane_state(lane);
          --l.reads;
          if (!r.ok()) {
            self->queue_.push_front(c);
            if (!transient_link_failure(r.status())) {
              return self->c_->fail("reading " + self->c_->files[c.file].src() + ": " + r.status().message());
            }
            // Source link lost: read nothing more on this lane until a retry; its chunks go to other lanes.
            if (!l.source_paused) {
              l.source_paused = true;
              self->c_->retry_later([self, lane] {
                self->lane_state(lane).source_paused = false;
                self->lane_loop(lane);
              });
            }
            return self->pump_writes(lane);
          }
          if (l.dest_paused) {  // this lane lost its destination meanwhile: another lane takes the chunk
            self->queue_.push_front(c);
            return self->wake_other_lanes(lane);
          }
          auto read = protocol::FsReadReply::from_json(r->header);
          if (!read.ok()) {
            return self->c_->fail("source host " + self->c_->spec.copy.from_host + ": " + read.status().message());
          }
          l.ready.push_back({c, std::move(r->body), std::move(read->hash)});
          self->pump_writes(lane);
        });
  }
  pump_writes(lane);
}

void RelayCopy::pump_writes(int lane) {
  Lane& l = lane_state(lane);
  while (!c_->finished && !c_->cancelled && !l.writing && !l.dest_paused && !l.ready.empty()) {
    Ready r = std::move(l.ready.front());
    l.ready.pop_front();
    write_chunk(lane, r.chunk, std::move(r.data), std::move(r.hash));
  }
}

void RelayCopy::write_chunk(int lane, Chunk c, std::string data, std::string hash) {
  CopyEntry& f = c_->files[c.file];
  f.hashes[static_cast<size_t>(c.index)] = hash;
  if (!f.local.empty() && !f.local_have.count(c.index)) {
    Status s = receive_write(f.local, c.index, c_->spec.chunk_size, hash, data);
    if (!s.ok()) return c_->fail("keep_local " + f.local + ": " + s.message());
    f.local_have[c.index] = hash;
  }
  auto d = f.dest_have.find(c.index);
  if (d != f.dest_have.end() && d->second == hash) return chunk_done(lane, c);
  f.dest_have.erase(c.index);
  int64_t len = static_cast<int64_t>(data.size());
  auto self = shared_from_this();
  nlohmann::json args = {{"dest", f.dest()}, {"index", c.index}, {"chunk_size", c_->spec.chunk_size}, {"hash", hash}};
  c_->bytes.sent += len;
  lane_state(lane).writing = true;
  c_->env.call_agent_lane(c_->spec.copy.to_host, lane, protocol::RecvWriteArgs::kOp, args, std::move(data),
                          [self, lane, c, hash, len](Result<protocol::Frame> r) {
                            if (self->c_->finished) return;
                            Lane& l = self->lane_state(lane);
                            l.writing = false;
                            if (!r.ok()) {
                              self->c_->bytes.resent += len;  // it will cross again
                              if (r.status().code() == StatusCode::kDataLoss &&
                                  ++self->corrupt_retries_[{c.file, c.index}] <= kMaxCorruptRetries) {
                                self->c_->env.record_event("copy.chunk_resent", {{"file", self->c_->files[c.file].rel},
                                                                                 {"chunk", c.index},
                                                                                 {"why", r.status().message()}});
                                self->queue_.push_front(c);
                                return self->lane_loop(lane);
                              }
                              if (transient_link_failure(r.status())) {
                                // Link lost: this lane writes again only once it reaches the destination, so
                                // an outage costs the one chunk that was in flight, not one per retry. It gives
                                // back every chunk it holds (those read but not sent never crossed) for the
                                // other lanes, or itself later, to read again.
                                for (auto it = l.ready.rbegin(); it != l.ready.rend(); ++it)
                                  self->queue_.push_front(it->chunk);
                                l.ready.clear();
                                self->queue_.push_front(c);
                                l.dest_paused = true;
                                self->c_->retry_later([self, lane] { self->await_dest_lane(lane); });
                                return self->wake_other_lanes(lane);
                              }
                              return self->c_->fail(self->c_->spec.copy.to_host + ":" + self->c_->files[c.file].dest() +
                                                    ": " + r.status().message());
                            }
                            self->c_->files[c.file].dest_have[c.index] = hash;
                            self->chunk_done(lane, c);
                          });
}

void RelayCopy::await_dest_lane(int lane) {
  if (c_->finished || c_->cancelled) return;
  auto self = shared_from_this();
  // A bodiless request: it proves the lane's connection is back without sending a chunk into the void.
  call_op_lane(c_->env, c_->spec.copy.to_host, lane, protocol::FsStatArgs{"."}, {},
               [self, lane](Result<protocol::FsStatReply> r) {
                 if (self->c_->finished) return;
                 if (r.ok()) {
                   self->lane_state(lane).dest_paused = false;
                   return self->lane_loop(lane);
                 }
                 if (transient_link_failure(r.status()))
                   return self->c_->retry_later([self, lane] { self->await_dest_lane(lane); });
                 self->c_->fail("reaching " + self->c_->spec.copy.to_host + ": " + r.status().message());
               });
}

void RelayCopy::chunk_done(int lane, Chunk c) {
  CopyEntry& f = c_->files[c.file];
  c_->bytes.done += chunk_len(f, c.index);
  if (--f.remaining == 0) commit_file(c.file);
  lane_loop(lane);
}

void RelayCopy::wake_other_lanes(int lane) {
  for (int other = 1; other <= c_->lanes; ++other) {
    if (other != lane) lane_loop(other);
  }
}

RelayCopy::Lane& RelayCopy::lane_state(int lane) {
  if (lane_states_.size() < static_cast<size_t>(c_->lanes)) lane_states_.resize(static_cast<size_t>(c_->lanes));
  return lane_states_[static_cast<size_t>(lane - 1)];
}

void RelayCopy::commit_file(size_t i) {
  const CopyEntry& f = c_->files[i];
  if (f.mtime_ns < 0 || f.dest_complete) return commit_checked(i);
  // Chunks were read at different times: if the file changed meanwhile (a trainer
  // rewriting its checkpoint in place) they may come from two versions, each
  // verified, the whole torn. Only the version that was listed is committed.
  auto self = shared_from_this();
  call_op(c_->env, c_->spec.copy.from_host, protocol::FsStatArgs{f.src()},
          [self, i](Result<protocol::FsStatReply> now) {
            if (self->c_->finished) return;
            if (!now.ok()) {
              if (transient_link_failure(now.status()))
                return self->c_->retry_later([self, i] { self->commit_file(i); });
              return self->c_->fail("checking the source " + self->c_->spec.copy.from_host + ":" +
                                    self->c_->files[i].src() + ": " + now.status().message());
            }
            std::string change = source_change(*now, self->c_->files[i]);
            if (!change.empty()) {
              return self->c_->fail("the source " + self->c_->spec.copy.from_host + ":" + self->c_->files[i].src() +
                                    " changed during the copy (" + change +
                                    "); nothing of it was committed: copy it again once it is no longer being written");
            }
            self->commit_checked(i);
          });
}

void RelayCopy::commit_checked(size_t i) {
  CopyEntry& f = c_->files[i];
  if (!f.local.empty() && !f.local_complete) {
    std::vector<int64_t> bad;
    Status s = receive_commit(f.local, c_->spec.chunk_size, f.hashes, &bad);
    if (!s.ok() && bad.empty()) return c_->fail("keep_local " + f.local + ": " + s.message());
    for (int64_t b : bad) {
      f.local_have.erase(b);
      queue_.push_back({i, b});
      ++f.remaining;
    }
    if (!bad.empty()) {
      for (int lane = 1; lane <= c_->lanes; ++lane) lane_loop(lane);
      return;
    }
    // Renamed into place: a later commit_file (the destination re-sending chunks
    // that failed on its disk) must not commit it again.
    f.local_complete = true;
  }
  if (f.dest_complete) return file_committed(i);  // already there whole: nothing to commit
  auto self = shared_from_this();
  std::string hashes;
  auto args = recv_commit_args(f, c_->spec.chunk_size, &hashes);
  if (!args.ok()) return c_->fail(args.status().message());
  // Files take turns on the lanes: each commit waits for two fsyncs, and one
  // agent serves one request at a time, so a folder of 100,000 small files would
  // otherwise commit one file after another (the file system batches concurrent
  // fsyncs from several agents into one journal commit).
  c_->env.call_agent_lane(
      c_->spec.copy.to_host, lane_of_file(i), protocol::RecvCommitArgs::kOp, *args, std::move(hashes),
      read_reply_of<protocol::RecvCommitArgs>([self, i](Result<protocol::RecvCommitReply> commit) {
        if (self->c_->finished) return;
        if (!commit.ok()) {
          if (transient_link_failure(commit.status()))
            return self->c_->retry_later([self, i] { self->commit_file(i); });
          return self->c_->fail("committing " + self->c_->spec.copy.to_host + ":" + self->c_->files[i].dest() + ": " +
                                commit.status().message());
        }
        CopyEntry& f = self->c_->files[i];
        std::vector<int64_t> bad = recv_commit_bad(*commit, f);
        if (!bad.empty()) {
          // Bytes went bad on the destination's disk after they were verified: send them again.
          self->c_->env.record_event("copy.chunks_failed_on_disk", {{"file", f.rel}, {"chunks", bad}});
          for (int64_t b : bad) {
            f.dest_have.erase(b);
            self->queue_.push_back({i, b});
            ++f.remaining;
            self->c_->bytes.done -= self->chunk_len(f, b);
          }
          for (int lane = 1; lane <= self->c_->lanes; ++lane) self->lane_loop(lane);
          return;
        }
        self->file_committed(i);
      }));
}

// A committed file keeps only what the manifest and the folder's keep list need:
// with 100,000 files in flight the per-chunk maps would be most of the memory.
void RelayCopy::file_committed(size_t i) {
  CopyEntry& f = c_->files[i];
  f.committed = true;
  f.file_hash = file_hash_of(f.hashes);
  std::vector<std::string>().swap(f.hashes);
  std::map<int64_t, std::string>().swap(f.dest_have);
  std::map<int64_t, std::string>().swap(f.local_have);
  if (++files_committed_ == c_->files.size()) finish_folder();
}

void RelayCopy::finish_folder() {
  CopyManifest manifest;
  for (const auto& f : c_->files) manifest.add(f.rel, f.size, f.file_hash);
  std::string manifest_hash = manifest.hash();
  auto self = shared_from_this();
  auto done = [self, manifest_hash] {
    StageOutcome o;
    o.state = StageOutcome::State::kSucceeded;
    o.outputs = {{"path", self->c_->spec.copy.to},
                 {"manifest_hash", manifest_hash},
                 {"bytes", std::to_string(self->c_->bytes.total)}};
    self->c_->finish(std::move(o));
  };
  if (!c_->is_dir) return done();
  // Files an earlier ferry copy wrote here that the source lacks are removed (a stale
  // model.safetensors beside a new sharded checkpoint would be the one an eval
  // loads); files ferry did not write stay. Both are named.
  std::string keep_body;  // written straight: no list of 100,000 names beside it
  for (const auto& f : c_->files) append_keep_entry(&keep_body, f.rel);
  if (!c_->spec.copy.keep_local.empty() && !local_finished_) {
    PruneReport pruned;
    std::vector<std::string> keep = c_->file_rels();
    Status s = receive_finish_dir(c_->spec.copy.keep_local, manifest_hash, &keep, &pruned);
    if (!s.ok()) return c_->fail("keep_local: " + s.message());
    note_pruned("keep_local " + c_->spec.copy.keep_local, pruned);
    local_finished_ = true;
  }
  c_->env.call_agent_lane(
      c_->spec.copy.to_host, 0, protocol::RecvFinishDirArgs::kOp,
      protocol::RecvFinishDirArgs{c_->spec.copy.to, manifest_hash, true}.to_json(), std::move(keep_body),
      [self, done](Result<protocol::Frame> r) {
        if (self->c_->finished) return;
        if (!r.ok()) {
          if (transient_link_failure(r.status())) return self->c_->retry_later([self] { self->finish_folder(); });
          return self->c_->fail("marking " + self->c_->spec.copy.to + " complete: " + r.status().message());
        }
        self->note_pruned(self->c_->spec.copy.to_host + ":" + self->c_->spec.copy.to,
                          prune_report_from_json(r->header));
        done();
      });
}

void RelayCopy::note_pruned(const std::string& where, const PruneReport& r) {
  if (r.removed_count > 0) {
    c_->env.record_event("copy.stale_removed", {{"where", where}, {"count", r.removed_count}, {"files", r.removed}});
  }
  if (r.left_count > 0) {
    c_->env.record_event("copy.left",
                         {{"where", where}, {"count", r.left_count}, {"files", r.left}, {"why", r.not_pruned}});
  }
  for (const auto& line : prune_report_lines(where, r)) {
    c_->env.note(line);
    c_->log_relay(line);
  }
}

int64_t RelayCopy::chunk_len(const CopyEntry& f, int64_t index) const {
  return copy_chunk_len(f.size, c_->spec.chunk_size, index);
}

}  // namespace ferry
