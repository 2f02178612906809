#include "jobs/copy/copy_stage.h"

#include <sys/stat.h>

#include <chrono>

#include "base/file_util.h"
#include "base/shell_quote.h"
#include "jobs/command/command_stage.h"
#include "jobs/log_tap_env.h"
#include "transfer/chunk_files.h"
#include "transfer/push_progress.h"
#include "transfer/push_spec.h"

namespace ferry {

// The StageEnv of the push's CommandStage (log_tap_env.h): the push's log lines
// carry its progress and its error, and the job's attempt events are named as the push's.
class CopyStage::PushEnv : public LogTapEnv {
 public:
  PushEnv(StageEnv& env, CopyStage& copy)
      : LogTapEnv(env, [&copy](const std::string& line) { copy.on_push_line(line); }) {}
  void record_event(const std::string& type, nlohmann::json detail) override {
    // attempt.launched / attempt.reattached of the push job: copy.push_launched / copy.push_reattached.
    if (type.rfind("attempt.", 0) == 0) return env_.record_event("copy.push_" + type.substr(8), std::move(detail));
    env_.record_event(type, std::move(detail));
  }
};

CopyStage::CopyStage(StageEnv& env, CopySpec spec) : env_(env), spec_(std::move(spec)), progress_timer_(env.io()) {
  lanes_ = std::max(1, spec_.streams);
}

CopyStage::~CopyStage() = default;

bool CopyStage::transient(const Status& s) const {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kCancelled;
}

int64_t CopyStage::chunk_len(const File& f, int64_t index) const {
  return copy_chunk_len(f.size, spec_.chunk_size, index);
}

void CopyStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  started_ms_ = now_ms();
  // A copy that will surely relay brings its lanes up while listing; one that
  // may go direct waits for the route, so a direct copy opens no lane at all.
  bool may_go_direct = spec_.route != "relay" && spec_.keep_local.empty() && spec_.from_ssh && spec_.to_ssh;
  if (!may_go_direct) warm_lanes();
  list_source();
}

void CopyStage::warm_lanes() {
  if (lanes_warm_) return;
  lanes_warm_ = true;
  // Bring every data lane up now, in parallel: an SSH session and an agent per
  // lane take seconds each, and the copy should not wait for them in turn.
  for (int lane = 1; lane <= lanes_; ++lane) {
    for (const auto& host : {spec_.from_host, spec_.to_host}) {
      env_.call_agent_lane(host, lane, "ping", nlohmann::json::object(), {}, [](Result<protocol::Frame>) {});
    }
  }
  // The destination's main link too: its first use comes only after the listing.
  env_.call_agent(spec_.to_host, "ping", nlohmann::json::object(), [](Result<protocol::Frame>) {});
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
    const CopySpec& spec = self->spec_;
    auto listed = plan_copy(r->header, spec.from_path, spec.to_path, spec.chunk_size);
    if (!listed.ok()) return self->fail("source host " + spec.from_host + ": " + listed.status().message());
    CopyListing& plan = *listed;
    self->is_dir_ = plan.is_dir;
    self->bytes_total_ = plan.bytes_total;
    for (auto& f : plan.files) {
      File file;
      static_cast<CopyFile&>(file) = std::move(f);
      if (!spec.keep_local.empty()) file.local = copy_dest_for(spec.keep_local, spec.from_path, file.rel, plan.is_dir);
      self->files_.push_back(std::move(file));
    }
    self->decide_route();
  });
}

void CopyStage::decide_route() {
  const bool direct = spec_.route == "direct";
  if (spec_.route == "relay") return choose("relay", "route: relay");
  if (!spec_.keep_local.empty()) {
    if (direct) {
      return fail("route: direct cannot keep_local: the bytes never reach the coordinator; use relay or auto");
    }
    return choose("relay", "keep_local: the coordinator keeps a copy, so the bytes pass through it");
  }
  if (!spec_.from_ssh || !spec_.to_ssh) {
    const std::string& local = spec_.from_ssh ? spec_.to_host : spec_.from_host;
    if (direct) return fail("route: direct needs both hosts on transport: ssh; '" + local + "' is a local host");
    return choose("relay", "'" + local + "' is a local host");
  }
  ask_hosts();
}

// The agents' own binaries and workdirs: the push runs the source's, and its ssh
// starts the destination's (installed there already: this coordinator reached it).
void CopyStage::ask_hosts() {
  auto self = shared_from_this();
  env_.call_agent(spec_.from_host, "hello", nlohmann::json::object(), [self](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self] { self->ask_hosts(); });
      return self->fail("reaching " + self->spec_.from_host + ": " + r.status().message());
    }
    self->src_exe_ = r->header.value("exe", std::string());
    self->src_workdir_ = r->header.value("workdir", std::string());
    self->env_.call_agent(self->spec_.to_host, "hello", nlohmann::json::object(), [self](Result<protocol::Frame> r) {
      if (self->finished_) return;
      if (!r.ok()) {
        if (self->transient(r.status())) return self->retry_later([self] { self->ask_hosts(); });
        return self->fail("reaching " + self->spec_.to_host + ": " + r.status().message());
      }
      self->dest_exe_ = r->header.value("exe", std::string());
      self->dest_workdir_ = r->header.value("workdir", std::string());
      self->find_push();
    });
  });
}

// A push this very attempt started (before a coordinator crash, `ferry resume`
// brings us here with the same token) is followed, whatever a probe would say now.
void CopyStage::find_push() {
  if (spec_.attempt.job.empty()) return probe_route();
  auto self = shared_from_this();
  nlohmann::json args = {
      {"job", spec_.attempt.job}, {"attempt", spec_.attempt.attempt}, {"token", spec_.attempt.token}};
  env_.call_agent(spec_.from_host, "job.status", args, [self](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (r.ok()) {
      self->route_ = "direct";
      self->route_reason_ = "this attempt's push is on " + self->spec_.from_host + " (" +
                            r->header.value("state", std::string("?")) + "): re-attached";
      self->env_.record_event("copy.started", {{"route", self->route_}, {"reason", self->route_reason_},
                                               {"files", self->files_.size()}, {"bytes", self->bytes_total_},
                                               {"streams", self->lanes_}, {"chunk_size", self->spec_.chunk_size}});
      self->report_progress();
      return self->start_push(true);
    }
    if (r.status().code() == StatusCode::kNotFound) return self->probe_route();
    if (self->transient(r.status())) return self->retry_later([self] { self->find_push(); });
    self->fail("looking for this attempt's push on " + self->spec_.from_host + ": " + r.status().message());
  });
}

void CopyStage::probe_route() {
  const std::string target = spec_.to_address + ":" + std::to_string(spec_.to_port);
  if (src_exe_.empty() || dest_exe_.empty() || dest_workdir_.empty()) {
    std::string why = "the agents did not say where they are installed";
    if (spec_.route == "direct") return fail("route: direct: " + why);
    return choose("relay", why);
  }
  auto self = shared_from_this();
  nlohmann::json args = {{"address", spec_.to_address}, {"port", spec_.to_port}, {"timeout_ms", kProbeTimeoutMs}};
  env_.call_agent(spec_.from_host, "net.probe", args, [self, target](Result<protocol::Frame> r) {
    if (self->finished_) return;
    const CopySpec& s = self->spec_;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self] { self->probe_route(); });
      return self->fail("probing " + target + " from " + s.from_host + ": " + r.status().message());
    }
    if (r->header.value("reachable", false)) {
      return self->choose("direct", s.from_host + " reaches " + s.to_host + " at " + target);
    }
    std::string why = s.from_host + " cannot reach " + s.to_host + " at " + target + " (" +
                      r->header.value("error", std::string("unreachable")) + ")";
    if (s.route == "direct") {
      return self->fail("route: direct: host '" + s.from_host + "' cannot reach host '" + s.to_host + "' at " + target +
                        " (" + r->header.value("error", std::string("unreachable")) +
                        "); link them, or use route: relay or auto");
    }
    self->choose("relay", why);
  });
}

void CopyStage::choose(const std::string& route, const std::string& reason) {
  route_ = route;
  route_reason_ = reason;
  env_.record_event("copy.started", {{"route", route_}, {"reason", reason}, {"files", files_.size()},
                                     {"bytes", bytes_total_}, {"streams", lanes_}, {"chunk_size", spec_.chunk_size}});
  report_progress();
  if (route_ == "direct") return start_push(false);
  start_relay();
}

void CopyStage::start_relay() {
  warm_lanes();
  auto self = shared_from_this();
  auto begin = [self] { self->begin_files(0); };
  if (!is_dir_) return begin();
  if (!spec_.keep_local.empty()) {
    Status s = receive_prepare_dir(spec_.keep_local);
    if (!s.ok()) return fail("keep_local: " + s.message());
  }
  nlohmann::json args = {{"path", spec_.to_path}};
  env_.call_agent(spec_.to_host, "recv.prepare_dir", args, [self, begin](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self] { self->start_relay(); });
      return self->fail("preparing " + self->spec_.to_host + ":" + self->spec_.to_path + ": " + r.status().message());
    }
    begin();
  });
}

void CopyStage::start_push(bool reattach) {
  PushSpec ps;
  ps.from = spec_.from_path;
  ps.workdir = src_workdir_;
  ps.to = spec_.to_path;
  ps.from_host = spec_.from_host;
  ps.to_host = spec_.to_host;
  ps.address = spec_.to_address;
  ps.port = spec_.to_port;
  ps.user = spec_.to_user;
  ps.dest_agent = dest_exe_;
  ps.dest_workdir = dest_workdir_;
  ps.streams = lanes_;
  ps.chunk_size = spec_.chunk_size;
  ps.give_up_s = spec_.give_up_s;
  CommandSpec cs;
  cs.host = spec_.from_host;
  cs.job = spec_.attempt.job;
  cs.attempt = spec_.attempt.attempt;
  cs.token = spec_.attempt.token;
  cs.command = "exec " + shell_quote(src_exe_) + " push";
  cs.env = {{"FERRY_PUSH_SPEC", ps.to_json().dump()}};
  cs.required_outputs = {"manifest_hash"};
  if (reattach) env_.note("re-attaching to the direct copy running on " + spec_.from_host);
  push_env_ = std::make_unique<PushEnv>(env_, *this);
  push_ = std::make_shared<CommandStage>(*push_env_, std::move(cs));
  auto self = shared_from_this();
  push_->start([self](StageOutcome o) { self->on_push_done(std::move(o)); });
  if (cancelled_) push_->cancel(false);
}

void CopyStage::on_push_line(const std::string& line) {
  if (auto p = parse_push_progress(line)) {
    bytes_done_ = p->bytes_done;
    bytes_total_ = p->bytes_total;
    bytes_sent_ = p->bytes_sent;
    bytes_resent_ = p->bytes_resent;
    bytes_skipped_ = p->bytes_skipped;
    push_rate_ = p->rate;
    push_seconds_ = p->elapsed_ms / 1000.0;
  } else if (auto e = parse_push_error(line)) {
    push_error_ = *e;
  }
}

void CopyStage::on_push_done(StageOutcome o) {
  if (finished_) return;
  StageOutcome out;
  out.state = o.state;
  if (o.state == StageOutcome::State::kSucceeded) {
    out.outputs = {{"path", spec_.to_path},
                   {"manifest_hash", o.outputs["manifest_hash"]},
                   {"bytes", o.outputs.count("bytes") ? o.outputs["bytes"] : std::to_string(bytes_total_)}};
    return succeed_with(std::move(out));
  }
  out.exit_code = o.exit_code;
  out.error = "direct copy " + spec_.from_host + " → " + spec_.to_host + ": " +
              (push_error_.empty() ? o.error : push_error_);
  finish(std::move(out));
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
    bool dest_same = dest_may_hold(r->header, f.size);
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
      Status taken = take_chunk_hashes(h->header.contains("chunks") ? h->header["chunks"] : nlohmann::json(), &f);
      if (!taken.ok()) return self->fail("source host " + self->spec_.from_host + ": " + taken.message());
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
  nlohmann::json args = recv_begin_args(f, spec_.chunk_size, file_hash);
  env_.call_agent(spec_.to_host, "recv.begin", args, [self, i, known = !file_hash.empty()](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self, i] { self->begin_files(i); });
      return self->fail(self->spec_.to_host + ":" + self->files_[i].dest + ": " + r.status().message());
    }
    File& f = self->files_[i];
    apply_recv_begin(&f, r->header);
    for (int64_t c = 0; c < f.chunks && f.local_complete; ++c) f.local_have[c] = f.hashes[static_cast<size_t>(c)];
    self->check_held(i, known);
  });
}

void CopyStage::check_held(size_t i, bool hashes_known) {
  File& f = files_[i];
  // Chunks held from an earlier attempt count only if the source still has the same bytes.
  auto drop_stale = [&f](const std::map<int64_t, std::string>& src) {
    drop_stale_chunks(&f.dest_have, src);
    drop_stale_chunks(&f.local_have, src);
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
    drop_stale(chunk_map_from_json(h->header["chunks"]));
    self->begin_files(i + 1);
  });
}

// Per lane: up to kChunksPerLane chunks held at once — fs.read requests in flight
// on the source lane, chunks read and waiting, and at most ONE recv.write in flight
// on the destination lane, so a cut destination link costs at most one chunk per
// lane, while reads from the source overlap writes to the destination.
void CopyStage::lane_loop(int lane) {
  if (finished_ || cancelled_) return;
  Lane& l = lane_state(lane);
  while (!l.source_paused && !l.dest_paused && !queue_.empty() &&
         l.reads + static_cast<int>(l.ready.size()) + (l.writing ? 1 : 0) < kChunksPerLane) {
    Chunk c = queue_.front();
    queue_.pop_front();
    ++l.reads;
    const File& f = files_[c.file];
    auto self = shared_from_this();
    nlohmann::json args = {{"path", f.src}, {"offset", c.index * spec_.chunk_size}, {"length", chunk_len(f, c.index)}};
    env_.call_agent_lane(spec_.from_host, lane, "fs.read", args, {}, [self, lane, c](Result<protocol::Frame> r) {
      if (self->finished_) return;
      Lane& l = self->lane_state(lane);
      --l.reads;
      if (!r.ok()) {
        self->queue_.push_front(c);
        if (!self->transient(r.status())) {
          return self->fail("reading " + self->files_[c.file].src + ": " + r.status().message());
        }
        // Source link lost: read nothing more on this lane until a retry; its chunks go to other lanes.
        if (!l.source_paused) {
          l.source_paused = true;
          self->retry_later([self, lane] {
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
      l.ready.push_back({c, std::move(r->body), r->header.value("hash", std::string())});
      self->pump_writes(lane);
    });
  }
  pump_writes(lane);
}

void CopyStage::pump_writes(int lane) {
  Lane& l = lane_state(lane);
  while (!finished_ && !cancelled_ && !l.writing && !l.dest_paused && !l.ready.empty()) {
    Ready r = std::move(l.ready.front());
    l.ready.pop_front();
    write_chunk(lane, r.chunk, std::move(r.data), std::move(r.hash));
  }
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
  lane_state(lane).writing = true;
  env_.call_agent_lane(spec_.to_host, lane, "recv.write", args, std::move(data),
                       [self, lane, c, hash, len](Result<protocol::Frame> r) {
    if (self->finished_) return;
    Lane& l = self->lane_state(lane);
    l.writing = false;
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
        // Link lost: this lane writes again only once it reaches the destination, so
        // an outage costs the one chunk that was in flight, not one per retry. It gives
        // back every chunk it holds (those read but not sent never crossed) for the
        // other lanes, or itself later, to read again.
        for (auto it = l.ready.rbegin(); it != l.ready.rend(); ++it) self->queue_.push_front(it->chunk);
        l.ready.clear();
        self->queue_.push_front(c);
        l.dest_paused = true;
        self->retry_later([self, lane] { self->await_dest_lane(lane); });
        return self->wake_other_lanes(lane);
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
    if (r.ok()) {
      self->lane_state(lane).dest_paused = false;
      return self->lane_loop(lane);
    }
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

void CopyStage::wake_other_lanes(int lane) {
  for (int other = 1; other <= lanes_; ++other) {
    if (other != lane) lane_loop(other);
  }
}

CopyStage::Lane& CopyStage::lane_state(int lane) {
  if (lane_states_.size() < static_cast<size_t>(lanes_)) lane_states_.resize(static_cast<size_t>(lanes_));
  return lane_states_[static_cast<size_t>(lane - 1)];
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
  nlohmann::json args = recv_commit_args(f, spec_.chunk_size);
  env_.call_agent(spec_.to_host, "recv.commit", args, [self, i](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      if (self->transient(r.status())) return self->retry_later([self, i] { self->commit_file(i); });
      return self->fail("committing " + self->spec_.to_host + ":" + self->files_[i].dest + ": " + r.status().message());
    }
    File& f = self->files_[i];
    std::vector<int64_t> bad = recv_commit_bad(r->header, f);
    if (!bad.empty()) {
      // Bytes went bad on the destination's disk after they were verified: send them again.
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
  std::string manifest_hash = copy_manifest_hash({files_.begin(), files_.end()});
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
  // A direct copy's rate is the push's own: it may have run before this coordinator did.
  double rate = route_ == "direct" ? push_rate_ : static_cast<double>(bytes_done_ - bytes_skipped_) / secs;
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
  if (push_) return push_->cancel(hard);  // the push's own end finishes this stage
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
  double secs = route_ == "direct" && push_seconds_ > 0 ? push_seconds_
                                                          : std::max(0.001, (now_ms() - started_ms_) / 1000.0);
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
