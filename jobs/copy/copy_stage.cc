#include "jobs/copy/copy_stage.h"

#include <sys/stat.h>

#include <chrono>

#include "agents/chunk_files.h"
#include "agents/file_util.h"

namespace ferry {
namespace {

std::string basename_of(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string dest_for(const std::string& to, const std::string& from, const std::string& rel, bool is_dir) {
  if (is_dir) return to + "/" + rel;
  if (!to.empty() && to.back() == '/') return to + basename_of(from);
  return to;
}

}  // namespace

CopyStage::CopyStage(StageEnv& env, CopySpec spec) : env_(env), spec_(std::move(spec)), progress_timer_(env.io()) {
  lanes_ = std::max(1, spec_.streams);
}

bool CopyStage::transient(const Status& s) const {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kCancelled;
}

int64_t CopyStage::chunk_len(const File& f, int64_t index) const {
  return std::min(spec_.chunk_size, f.size - index * spec_.chunk_size);
}

void CopyStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  started_ms_ = now_ms();
  // Bring every data lane up now, in parallel with listing: an SSH session and
  // an agent per lane take seconds each, and the copy should not wait for them in turn.
  for (int lane = 1; lane <= lanes_; ++lane) {
    for (const auto& host : {spec_.from_host, spec_.to_host}) {
      env_.call_agent_lane(host, lane, "ping", nlohmann::json::object(), {}, [](Result<protocol::Frame>) {});
    }
  }
  list_source();
}

void CopyStage::retry_later(std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(env_.io(), std::chrono::milliseconds(kRetryMs));
  auto self = shared_from_this();
  timer->async_wait([self, timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec && !self->finished_) fn();
  });
}

void CopyStage::list_source() {
  auto self = shared_from_this();
  env_.call_agent(spec_.from_host, "fs.list", {{"path", spec_.from_path}}, [self](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self] { self->list_source(); });
      return self->fail("listing " + self->spec_.from_host + ":" + self->spec_.from_path + ": " + r.status().message());
    }
    self->is_dir_ = r->header.value("type", std::string()) == "dir";
    for (const auto& f : r->header["files"]) {
      File file;
      file.rel = f.value("path", std::string());
      file.size = f.value("size", int64_t{0});
      file.mode = f.value("mode", 0644);
      file.src = self->is_dir_ ? self->spec_.from_path + "/" + file.rel : self->spec_.from_path;
      file.dest = dest_for(self->spec_.to_path, self->spec_.from_path, file.rel, self->is_dir_);
      if (!self->spec_.keep_local.empty()) {
        file.local = dest_for(self->spec_.keep_local, self->spec_.from_path, file.rel, self->is_dir_);
      }
      file.chunks = file.size == 0 ? 0 : (file.size + self->spec_.chunk_size - 1) / self->spec_.chunk_size;
      file.hashes.resize(static_cast<size_t>(file.chunks));
      self->bytes_total_ += file.size;
      self->files_.push_back(std::move(file));
    }
    self->decide_route();
  });
}

void CopyStage::decide_route() {
  if (spec_.route == "direct") {
    return fail("route: direct is not available in this build; use relay or auto (relays through the coordinator)");
  }
  route_ = "relay";
  env_.record_event("copy.started", {{"route", route_}, {"files", files_.size()}, {"bytes", bytes_total_},
                                     {"streams", lanes_}, {"chunk_size", spec_.chunk_size}});
  report_progress();
  auto self = shared_from_this();
  auto begin = [self] { self->begin_files(0); };
  if (!is_dir_) return begin();
  if (!spec_.keep_local.empty()) {
    Status s = receive_prepare_dir(spec_.keep_local);
    if (!s.ok()) return fail("keep_local: " + s.message());
  }
  env_.call_agent(spec_.to_host, "recv.prepare_dir", {{"path", spec_.to_path}}, [self, begin](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self] { self->decide_route(); });
      return self->fail("preparing " + self->spec_.to_host + ":" + self->spec_.to_path + ": " + r.status().message());
    }
    begin();
  });
}

void CopyStage::begin_files(size_t i) {
  if (i == files_.size()) {
    // Everything each side lacks goes in one queue, so lanes work across files.
    for (size_t fi = 0; fi < files_.size(); ++fi) {
      File& f = files_[fi];
      for (int64_t c = 0; c < f.chunks; ++c) {
        bool need_dest = !f.dest_have.count(c);
        bool need_local = !f.local.empty() && !f.local_have.count(c);
        if (need_dest || need_local) {
          queue_.push_back({fi, c});
          ++f.remaining;
        } else {
          f.hashes[static_cast<size_t>(c)] = f.dest_have[c];
          bytes_skipped_ += chunk_len(f, c);
          bytes_done_ += chunk_len(f, c);
        }
      }
    }
    if (bytes_skipped_ > 0) {
      int64_t whole = 0;
      for (const auto& f : files_) whole += f.dest_complete && (f.local.empty() || f.local_complete);
      env_.record_event("copy.resumed", {{"bytes_already_there", bytes_skipped_}, {"files_already_there", whole}});
    }
    bool any = false;
    for (size_t fi = 0; fi < files_.size(); ++fi) {
      if (files_[fi].remaining == 0) commit_file(fi);
      else any = true;
    }
    if (any) {
      for (int lane = 1; lane <= lanes_; ++lane) lane_loop(lane);
    }
    return;
  }
  // A file already at its final name with the same size may be identical: then
  // the source's whole-file hash lets each receiver skip it. Only then is the
  // source hashed up front; a fresh copy costs one stat.
  File& f = files_[i];
  auto self = shared_from_this();
  if (f.size == 0) return begin_receivers(i, "");
  env_.call_agent(spec_.to_host, "fs.stat", {{"path", f.dest}}, [self, i](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self, i] { self->begin_files(i); });
      return self->fail(self->spec_.to_host + ":" + self->files_[i].dest + ": " + r.status().message());
    }
    File& f = self->files_[i];
    bool dest_same = r->header.value("exists", false) && r->header.value("type", std::string()) == "file" &&
                     r->header.value("size", int64_t{-1}) == f.size;
    struct stat st;
    bool local_same = !f.local.empty() && ::stat(f.local.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                      st.st_size == f.size;
    if (!dest_same && !local_same) return self->begin_receivers(i, "");
    nlohmann::json hargs = {{"path", f.src}, {"chunk_size", self->spec_.chunk_size},
                            {"indices", nlohmann::json::array()}};
    self->env_.call_agent(self->spec_.from_host, "fs.hash", hargs, [self, i](Result<protocol::Frame> h) {
      if (self->finished_) return;
      if (!h.ok()) {
        if (self->transient(h.status())) return self->retry_later([self, i] { self->begin_files(i); });
        return self->fail("hashing source " + self->files_[i].src + ": " + h.status().message());
      }
      File& f = self->files_[i];
      const auto& chunks = h->header["chunks"];
      if (static_cast<int64_t>(chunks.size()) != f.chunks) {
        return self->fail("source " + self->spec_.from_host + ":" + f.src + " changed size during the copy");
      }
      for (auto& [k, v] : chunks.items()) f.hashes[static_cast<size_t>(std::stoll(k))] = v.get<std::string>();
      self->begin_receivers(i, file_hash_of(f.hashes));
    });
  });
}

void CopyStage::begin_receivers(size_t i, const std::string& file_hash) {
  File& f = files_[i];
  if (!f.local.empty()) {
    auto local = receive_begin(f.local, f.size, spec_.chunk_size, f.mode, file_hash);
    if (!local.ok()) return fail("keep_local " + f.local + ": " + local.status().message());
    f.local_complete = local->complete;
    f.local_have = local->have;
  }
  auto self = shared_from_this();
  nlohmann::json args = {{"dest", f.dest}, {"size", f.size}, {"chunk_size", spec_.chunk_size}, {"mode", f.mode}};
  if (!file_hash.empty()) args["file_hash"] = file_hash;
  env_.call_agent(spec_.to_host, "recv.begin", args, [self, i, known = !file_hash.empty()](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self, i] { self->begin_files(i); });
      return self->fail(self->spec_.to_host + ":" + self->files_[i].dest + ": " + r.status().message());
    }
    File& f = self->files_[i];
    f.dest_complete = r->header.value("complete", false);
    f.dest_have.clear();
    for (auto& [k, v] : r->header["have"].items()) f.dest_have[std::stoll(k)] = v.get<std::string>();
    for (int64_t c = 0; c < f.chunks; ++c) {
      if (f.dest_complete) f.dest_have[c] = f.hashes[static_cast<size_t>(c)];
      if (f.local_complete) f.local_have[c] = f.hashes[static_cast<size_t>(c)];
    }
    self->check_held(i, known);
  });
}

void CopyStage::check_held(size_t i, bool hashes_known) {
  File& f = files_[i];
  // Chunks held from an earlier attempt count only if the source still has the same bytes.
  auto drop_stale = [&f](const std::map<int64_t, std::string>& src) {
    for (auto& [idx, src_hash] : src) {
      auto d = f.dest_have.find(idx);
      if (d != f.dest_have.end() && d->second != src_hash) f.dest_have.erase(d);
      auto l = f.local_have.find(idx);
      if (l != f.local_have.end() && l->second != src_hash) f.local_have.erase(l);
    }
  };
  if (hashes_known) {
    std::map<int64_t, std::string> src;
    for (int64_t c = 0; c < f.chunks; ++c) src[c] = f.hashes[static_cast<size_t>(c)];
    drop_stale(src);
    return begin_files(i + 1);
  }
  std::set<int64_t> all;
  for (auto& [k, v] : f.dest_have) all.insert(k);
  for (auto& [k, v] : f.local_have) all.insert(k);
  std::vector<int64_t> held(all.begin(), all.end());
  if (held.empty()) return begin_files(i + 1);
  auto self = shared_from_this();
  nlohmann::json hargs = {{"path", f.src}, {"chunk_size", spec_.chunk_size}, {"indices", held}};
  env_.call_agent(spec_.from_host, "fs.hash", hargs, [self, i, drop_stale](Result<protocol::Frame> h) {
    if (self->finished_) return;
    if (!h.ok()) {
      if (self->transient(h.status())) return self->retry_later([self, i] { self->begin_files(i); });
      return self->fail("hashing source " + self->files_[i].src + ": " + h.status().message());
    }
    std::map<int64_t, std::string> src;
    for (auto& [k, v] : h->header["chunks"].items()) src[std::stoll(k)] = v.get<std::string>();
    drop_stale(src);
    self->begin_files(i + 1);
  });
}

void CopyStage::lane_loop(int lane) {
  if (finished_ || cancelled_ || queue_.empty()) return;
  Chunk c = queue_.front();
  queue_.pop_front();
  const File& f = files_[c.file];
  auto self = shared_from_this();
  nlohmann::json args = {{"path", f.src}, {"offset", c.index * spec_.chunk_size}, {"length", chunk_len(f, c.index)}};
  env_.call_agent_lane(spec_.from_host, lane, "fs.read", args, {}, [self, lane, c](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      self->queue_.push_front(c);
      if (self->transient(r.status())) return self->retry_later([self, lane] { self->lane_loop(lane); });
      return self->fail("reading " + self->files_[c.file].src + ": " + r.status().message());
    }
    std::string hash = r->header.value("hash", std::string());
    self->write_chunk(lane, c, std::move(r->body), hash);
  });
}

void CopyStage::write_chunk(int lane, Chunk c, std::string data, std::string hash) {
  File& f = files_[c.file];
  f.hashes[static_cast<size_t>(c.index)] = hash;
  if (!f.local.empty() && !f.local_have.count(c.index)) {
    Status s = receive_write(f.local, c.index, spec_.chunk_size, hash, data);
    if (!s.ok()) return fail("keep_local " + f.local + ": " + s.message());
    f.local_have[c.index] = hash;
  }
  auto d = f.dest_have.find(c.index);
  if (d != f.dest_have.end() && d->second == hash) return chunk_done(lane, c);
  f.dest_have.erase(c.index);
  int64_t len = static_cast<int64_t>(data.size());
  auto self = shared_from_this();
  nlohmann::json args = {{"dest", f.dest}, {"index", c.index}, {"chunk_size", spec_.chunk_size}, {"hash", hash}};
  bytes_sent_ += len;
  env_.call_agent_lane(spec_.to_host, lane, "recv.write", args, std::move(data),
                       [self, lane, c, hash, len](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      self->bytes_resent_ += len;  // it will cross again
      if (r.status().code() == StatusCode::kDataLoss &&
          ++self->corrupt_retries_[{c.file, c.index}] <= kMaxCorruptRetries) {
        self->env_.record_event("copy.chunk_resent", {{"file", self->files_[c.file].rel}, {"chunk", c.index},
                                                      {"why", r.status().message()}});
        self->queue_.push_front(c);
        return self->lane_loop(lane);
      }
      if (self->transient(r.status())) {
        // Link lost: take the next chunk only once this lane reaches the destination
        // again, so an outage costs the one chunk that was in flight, not one per retry.
        self->queue_.push_front(c);
        return self->retry_later([self, lane] { self->await_dest_lane(lane); });
      }
      return self->fail(self->spec_.to_host + ":" + self->files_[c.file].dest + ": " + r.status().message());
    }
    self->files_[c.file].dest_have[c.index] = hash;
    self->chunk_done(lane, c);
  });
}

void CopyStage::await_dest_lane(int lane) {
  if (finished_ || cancelled_) return;
  auto self = shared_from_this();
  // A bodiless request: it proves the lane's connection is back without sending a chunk into the void.
  env_.call_agent_lane(spec_.to_host, lane, "fs.stat", {{"path", "."}}, {}, [self, lane](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (r.ok()) return self->lane_loop(lane);
    if (self->transient(r.status())) return self->retry_later([self, lane] { self->await_dest_lane(lane); });
    self->fail("reaching " + self->spec_.to_host + ": " + r.status().message());
  });
}

void CopyStage::chunk_done(int lane, Chunk c) {
  File& f = files_[c.file];
  bytes_done_ += chunk_len(f, c.index);
  if (--f.remaining == 0) commit_file(c.file);
  lane_loop(lane);
}

void CopyStage::commit_file(size_t i) {
  File& f = files_[i];
  if (!f.local.empty() && !f.local_complete) {
    std::vector<int64_t> bad;
    Status s = receive_commit(f.local, spec_.chunk_size, f.hashes, &bad);
    if (!s.ok() && bad.empty()) return fail("keep_local " + f.local + ": " + s.message());
    for (int64_t b : bad) {
      f.local_have.erase(b);
      queue_.push_back({i, b});
      ++f.remaining;
    }
    if (!bad.empty()) {
      for (int lane = 1; lane <= lanes_; ++lane) lane_loop(lane);
      return;
    }
    // Renamed into place: a later commit_file (the destination re-sending chunks
    // that failed on its disk) must not commit it again.
    f.local_complete = true;
  }
  if (f.dest_complete) {  // already there whole: nothing to commit
    f.committed = true;
    if (++files_committed_ == files_.size()) finish_folder();
    return;
  }
  auto self = shared_from_this();
  nlohmann::json args = {{"dest", f.dest}, {"chunk_size", spec_.chunk_size}, {"chunks", f.hashes}};
  env_.call_agent(spec_.to_host, "recv.commit", args, [self, i](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self, i] { self->commit_file(i); });
      return self->fail("committing " + self->spec_.to_host + ":" + self->files_[i].dest + ": " + r.status().message());
    }
    File& f = self->files_[i];
    if (!r->header.value("committed", false)) {
      // Bytes went bad on the destination's disk after they were verified: send them again.
      auto bad = r->header.value("bad", std::vector<int64_t>{});
      self->env_.record_event("copy.chunks_failed_on_disk", {{"file", f.rel}, {"chunks", bad}});
      for (int64_t b : bad) {
        f.dest_have.erase(b);
        self->queue_.push_back({i, b});
        ++f.remaining;
        self->bytes_done_ -= self->chunk_len(f, b);
      }
      for (int lane = 1; lane <= self->lanes_; ++lane) self->lane_loop(lane);
      return;
    }
    f.committed = true;
    if (++self->files_committed_ == self->files_.size()) self->finish_folder();
  });
}

void CopyStage::finish_folder() {
  nlohmann::json manifest = nlohmann::json::array();
  for (const auto& f : files_) manifest.push_back({f.rel, f.size, file_hash_of(f.hashes)});
  std::string text = manifest.dump();
  std::string manifest_hash = file_hash_of({text});
  auto self = shared_from_this();
  auto done = [self, manifest_hash] {
    StageOutcome o;
    o.state = StageOutcome::State::kSucceeded;
    o.outputs = {{"path", self->spec_.to_path},
                 {"manifest_hash", manifest_hash},
                 {"bytes", std::to_string(self->bytes_total_)}};
    self->succeed_with(std::move(o));
  };
  if (!is_dir_) return done();
  if (!spec_.keep_local.empty()) {
    Status s = receive_finish_dir(spec_.keep_local, manifest_hash);
    if (!s.ok()) return fail("keep_local: " + s.message());
  }
  env_.call_agent(spec_.to_host, "recv.finish_dir", {{"path", spec_.to_path}, {"manifest_hash", manifest_hash}},
                  [self, done](Result<protocol::Frame> r) {
                    if (self->finished_) return;
                    if (!r.ok()) {
                      if (self->transient(r.status())) return self->retry_later([self] { self->finish_folder(); });
                      return self->fail("marking " + self->spec_.to_path + " complete: " + r.status().message());
                    }
                    done();
                  });
}

void CopyStage::report_progress() {
  if (finished_) return;
  double secs = std::max(0.001, (now_ms() - started_ms_) / 1000.0);
  double rate = static_cast<double>(bytes_done_ - bytes_skipped_) / secs;
  nlohmann::json p = {{"bytes_done", bytes_done_}, {"bytes_total", bytes_total_}, {"rate", rate},
                      {"route", route_.empty() ? "?" : route_}, {"files", files_.size()},
                      {"bytes_resent", bytes_resent_}};
  if (rate > 0) p["eta_s"] = static_cast<double>(bytes_total_ - bytes_done_) / rate;
  env_.set_progress(p);
  progress_timer_.expires_after(std::chrono::milliseconds(kProgressEveryMs));
  auto self = shared_from_this();
  progress_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (!ec) self->report_progress();
  });
}

void CopyStage::cancel(bool hard) {
  if (finished_) return;
  cancelled_ = true;
  StageOutcome o;
  o.state = StageOutcome::State::kCancelled;
  o.error = "cancelled";
  finish(std::move(o));
}

void CopyStage::fail(const std::string& why) {
  StageOutcome o;
  o.error = why;
  finish(std::move(o));
}

void CopyStage::succeed_with(StageOutcome o) { finish(std::move(o)); }

void CopyStage::finish(StageOutcome o) {
  if (finished_) return;
  double secs = std::max(0.001, (now_ms() - started_ms_) / 1000.0);
  o.metrics = {{"bytes_total", static_cast<double>(bytes_total_)},
               {"bytes_sent", static_cast<double>(bytes_sent_)},
               {"bytes_resent", static_cast<double>(bytes_resent_)},
               {"bytes_already_there", static_cast<double>(bytes_skipped_)},
               {"seconds", secs},
               {"mib_per_s", static_cast<double>(bytes_sent_) / secs / (1 << 20)}};
  report_progress();
  finished_ = true;
  progress_timer_.cancel();
  env_.record_event("copy.finished", {{"state", outcome_state_name(o.state)}, {"bytes_sent", bytes_sent_},
                                      {"bytes_resent", bytes_resent_}, {"seconds", secs}});
  auto done = std::move(done_);
  done(std::move(o));
}

}  // namespace ferry
