#include "agents/push.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "agents/agent_peer.h"
#include "base/beneath.h"
#include "base/clock.h"
#include "base/file_util.h"
#include "base/login_shell_command.h"
#include "base/shell_quote.h"
#include "protocol/ops/fs.h"
#include "protocol/ops/recv.h"
#include "transfer/chunk_files.h"
#include "transfer/copy_plan.h"
#include "transfer/push_progress.h"

namespace ferry {
namespace {

// recv.write requests in flight per stream: one, so a cut between the hosts costs
// at most the one chunk each stream was writing (the streams keep the link busy).
constexpr int kWindow = 1;
constexpr int kHelloTimeoutMs = 30000;       // ssh connect, login and the agent's hello
constexpr int kCallTimeoutMs = 60000;        // room in the ssh pipe; a quick op's reply
constexpr int kSlowOpTimeoutMs = 600000;     // recv.begin and recv.commit re-hash whole files
constexpr double kFirstConnectGiveUpS = 30;  // before any stream ever reached the destination
constexpr double kBackoffInitialS = 0.5;
constexpr double kBackoffMaxS = 10;
constexpr double kDestBusyWaitS = 2;  // between asks while another copy holds the destination
constexpr int kProgressEveryMs = 1000;
constexpr int kMaxCorruptRetries = 5;
constexpr int kSshConnectTimeoutS = 10;
constexpr int kSshAliveEveryS = 5;  // with 3 misses: a dead link is seen in ~15 s, as the coordinator does
constexpr int kSshAliveCount = 3;

bool contains(const std::string& s, const char* word) { return s.find(word) != std::string::npos; }

// This account's home as /etc/passwd has it, which is where OpenSSH looks for
// ~/.ssh (read directly: getpwuid needs NSS, which a static binary lacks).
std::string account_home() {
  auto passwd = read_file("/etc/passwd");
  if (!passwd.ok()) return "";
  const std::string uid = std::to_string(::getuid());
  size_t pos = 0;
  while (pos < passwd->size()) {
    size_t end = passwd->find('\n', pos);
    if (end == std::string::npos) end = passwd->size();
    std::vector<std::string> fields;
    size_t f = pos;
    for (;;) {
      size_t colon = passwd->find(':', f);
      if (colon == std::string::npos || colon > end) colon = end;
      fields.push_back(passwd->substr(f, colon - f));
      if (colon == end) break;
      f = colon + 1;
    }
    if (fields.size() >= 6 && fields[2] == uid) return fields[5];
    pos = end + 1;
  }
  return "";
}

// One unit of a stream's work: chunk `index` of a file, or (index < 0) its commit.
struct Item {
  size_t file = 0;
  int64_t index = -1;
};

class Pusher {
 public:
  Pusher(const PushSpec& spec, std::FILE* log, std::function<std::string()> superseded)
      : spec_(spec),
        log_(log),
        superseded_(std::move(superseded)),
        rng_(std::random_device{}()) {}

  Result<PushResult> run();

 private:
  struct Pending {
    Item item;
    std::string hash;
    int64_t len = 0;
  };

  std::string dest_name() const {
    return spec_.to_host + " (" + (spec_.user.empty() ? "" : spec_.user + "@") + spec_.address + ":" +
           std::to_string(spec_.port) + ")";
  }
  void say(const std::string& line);
  Status classify(const Status& s) const;
  Result<std::unique_ptr<AgentPeer>> connect(int stream);
  Status with_peer(int stream, const std::function<Status(AgentPeer&)>& work);
  Status prepare(AgentPeer& peer);
  Status begin_file(AgentPeer& peer, size_t i);
  void queue_work();
  void stream_main(int stream);
  Status send_item(AgentPeer& peer, const Item& item, Pending* pending);
  Status settle(const Pending& p, const protocol::Frame& reply);
  bool take(Item* item);
  void fail(const Status& s);
  bool stopping();
  bool wait_or_stop(double seconds);
  PushProgress progress();
  Result<UniqueFd> open_source(const CopyFile& f) const;
  Status on_dest(const Status& s) const {
    return s.code() == StatusCode::kUnavailable ? s : Status(s.code(), "on " + spec_.to_host + ": " + s.message());
  }

  PushSpec spec_;
  std::FILE* log_;
  std::function<std::string()> superseded_;
  std::mutex log_mu_;
  std::string source_;
  UniqueFd source_fd_;  // the source as listed, held open: its files are read beneath it
  CopyListing plan_;
  std::vector<std::unique_ptr<AgentPeer>> peers_;  // one per stream; [0] also prepares and finishes
  std::atomic<bool> ever_connected_{false};
  int64_t started_ms_ = 0;

  std::mutex mu_;                // guards everything below
  int64_t last_settled_ms_ = 0;  // a chunk or a commit was answered
  std::condition_variable cv_;
  std::deque<Item> queue_;
  size_t committed_ = 0;
  int streams_running_ = 0;
  Status failure_;
  bool stop_ = false;
  std::map<std::pair<size_t, int64_t>, int> corrupt_retries_;
  int64_t bytes_done_ = 0, bytes_sent_ = 0, bytes_resent_ = 0, bytes_skipped_ = 0;
  std::mt19937_64 rng_;
};

void Pusher::say(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mu_);
  std::fprintf(log_, "%s\n", line.c_str());
  std::fflush(log_);
}

// OpenSSH says why it failed on stderr (AgentPeer puts that in the message):
// what no retry can fix ends the push with a message naming both hosts.
Status Pusher::classify(const Status& s) const {
  if (s.code() != StatusCode::kUnavailable) return s;
  const std::string& m = s.message();
  const std::string from = "host '" + spec_.from_host + "'", to = "host '" + spec_.to_host + "'";
  if (contains(m, "Host key verification failed") || contains(m, "REMOTE HOST IDENTIFICATION HAS CHANGED")) {
    return permission_denied(from + " does not trust the ssh host key of " + to + " at " + spec_.address +
                             " (add it to the known_hosts of " + spec_.from_host + "'s ssh client): " + m);
  }
  if (contains(m, "exec:") || contains(m, "not found") || contains(m, "No such file")) {
    return failed_precondition("the agent " + spec_.dest_agent + " could not be started on " + to + ": " + m);
  }
  if (contains(m, "Permission denied") || contains(m, "Too many authentication failures")) {
    return permission_denied(to + " at " + spec_.address + " refused the ssh login from " + from + ": " + m);
  }
  if (contains(m, "Could not resolve hostname")) {
    return not_found(from + " cannot resolve the address of " + to + ": " + m);
  }
  return s;
}

bool Pusher::stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool Pusher::wait_or_stop(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stop_; });
  return !stop_;
}

void Pusher::fail(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stop_) failure_ = s;
  stop_ = true;
  cv_.notify_all();
}

Result<std::unique_ptr<AgentPeer>> Pusher::connect(int stream) {
  const char* home = std::getenv("HOME");
  auto argv = push_ssh_command(spec_, home ? home : "", account_home());
  if (!argv.ok()) return argv.status();
  const int64_t began = mono_ms();
  const double window = ever_connected_ ? spec_.give_up_s : kFirstConnectGiveUpS;
  double backoff = kBackoffInitialS;
  for (int tries = 1;; ++tries) {
    if (stopping()) return cancelled("stopping");
    auto peer = AgentPeer::start(*argv, kHelloTimeoutMs, kPushAgentReady);
    if (peer.ok()) {
      if (tries > 1 || ever_connected_)
        say("ferry-push: stream " + std::to_string(stream + 1) + " reached " + dest_name());
      ever_connected_ = true;
      return peer;
    }
    Status s = classify(peer.status());
    if (s.code() != StatusCode::kUnavailable) return s;
    double waited = (mono_ms() - began) / 1000.0;
    if (waited + backoff > window) {
      return unavailable("host '" + spec_.from_host + "' could not reach " + dest_name() + " over ssh for " +
                         std::to_string(static_cast<int>(waited)) + " s: " + s.message());
    }
    double delay;
    {
      std::lock_guard<std::mutex> lock(mu_);  // streams reconnect at once: jitter spreads them
      delay = backoff * std::uniform_real_distribution<double>(0.5, 1.0)(rng_);
    }
    say("ferry-push: stream " + std::to_string(stream + 1) + " cannot reach " + dest_name() + " (" + s.message() +
        "); trying again in " + std::to_string(static_cast<int>(delay * 1000)) + " ms");
    if (!wait_or_stop(delay)) return cancelled("stopping");
    backoff = std::min(backoff * 2, kBackoffMaxS);
  }
}

// Runs `work` on the stream's link, reconnecting and starting `work` over when
// the link drops (the receiver's ops are idempotent).
Status Pusher::with_peer(int stream, const std::function<Status(AgentPeer&)>& work) {
  bool said_waiting = false;
  for (;;) {
    if (!peers_[stream]) {
      auto p = connect(stream);
      if (!p.ok()) return p.status();
      peers_[stream] = std::move(p).value();
    }
    Status s = work(*peers_[stream]);
    if (s.code() != StatusCode::kUnavailable) return s;
    if (s.message().find(kDestBusy) != std::string::npos) {
      // The link is fine; the destination is another copy's for now: ask again later.
      if (!said_waiting) say("ferry-push: waiting: " + s.message());
      said_waiting = true;
      if (!wait_or_stop(kDestBusyWaitS)) return cancelled("stopping");
      continue;
    }
    say("ferry-push: lost " + dest_name() + " (" + s.message() + "); reconnecting");
    peers_[stream].reset();
  }
}

Status Pusher::prepare(AgentPeer& peer) {
  if (plan_.is_dir) {
    // The copy's files are recorded as ferry's before any is written (transfer/copied_files.h).
    std::string incoming;
    for (const auto& f : plan_.files) append_keep_entry(&incoming, f.rel);
    auto r = peer.call(protocol::RecvPrepareDirArgs::kOp, protocol::RecvPrepareDirArgs{spec_.to, true}.to_json(),
                       kCallTimeoutMs, incoming);
    if (!r.ok()) return on_dest(r.status());
  }
  for (size_t i = 0; i < plan_.files.size(); ++i) FERRY_RETURN_IF_ERROR(begin_file(peer, i));
  return Status();
}

// As the relay does (RelayCopy::begin_files, the steps in copy_plan.h): a file already at its final name
// with the same size is hashed at the source first, so an identical one is
// skipped whole; chunks held from an earlier attempt count only if the source
// still has the same bytes.
Status Pusher::begin_file(AgentPeer& peer, size_t i) {
  CopyFile& f = plan_.files[i];
  std::string file_hash;
  if (f.size > 0) {
    auto st = peer.call(protocol::FsStatArgs::kOp, protocol::FsStatArgs{f.dest()}.to_json(), kCallTimeoutMs);
    if (!st.ok()) return on_dest(st.status());
    auto dest = protocol::FsStatReply::from_json(st->header);
    if (!dest.ok()) return data_loss(dest_name() + ": " + dest.status().message());
    if (dest_may_hold(*dest, f.size)) {
      auto src = open_source(f);
      if (!src.ok()) return src.status();
      auto h = hash_chunks(src->get(), f.src(), spec_.chunk_size, {});
      if (!h.ok()) return h.status();
      if (static_cast<int64_t>(h->size()) != f.chunks) return data_loss(f.src() + " changed size during the copy");
      for (auto& [k, v] : *h) f.hashes[static_cast<size_t>(k)] = v;
      file_hash = file_hash_of(f.hashes);
    }
  }
  auto b = peer.call(protocol::RecvBeginArgs::kOp, recv_begin_args(f, spec_.chunk_size, file_hash), kSlowOpTimeoutMs);
  if (!b.ok()) return on_dest(b.status());
  auto begun = protocol::RecvBeginReply::from_json(b->header);
  if (!begun.ok()) return data_loss(dest_name() + ": " + begun.status().message());
  apply_recv_begin(&f, *begun);
  if (!file_hash.empty()) {
    drop_stale_chunks(&f.dest_have, source_hashes(f));
  } else if (!f.dest_have.empty()) {
    auto src = open_source(f);
    if (!src.ok()) return src.status();
    auto h = hash_chunks(src->get(), f.src(), spec_.chunk_size, held_indices({&f.dest_have}));
    if (!h.ok()) return h.status();
    drop_stale_chunks(&f.dest_have, *h);
  }
  return Status();
}

void Pusher::queue_work() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t fi = 0; fi < plan_.files.size(); ++fi) {
    CopyFile& f = plan_.files[fi];
    int64_t there = queue_missing_chunks(
        &f, spec_.chunk_size, [&f](int64_t c) { return !f.dest_have.count(c); },
        [this, fi](int64_t c) {
          queue_.push_back({fi, c});
        });
    bytes_skipped_ += there;
    bytes_done_ += there;
    if (f.remaining > 0) continue;
    if (f.dest_complete) {
      f.committed = true;
      ++committed_;
    } else {
      queue_.push_back({fi, -1});
    }
  }
}

bool Pusher::take(Item* item) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || queue_.empty()) return false;
  *item = queue_.front();
  queue_.pop_front();
  return true;
}

Status Pusher::send_item(AgentPeer& peer, const Item& item, Pending* p) {
  CopyFile& f = plan_.files[item.file];
  p->item = item;
  if (item.index < 0) {
    // Chunks were read at different times: a file rewritten meanwhile (a trainer
    // saving over its checkpoint) may be a mix of two versions, each chunk
    // verified, the whole torn. Only the version that was listed is committed.
    std::string change = f.dest_complete ? "" : source_change(stat_reply(f.src()), f);
    if (!change.empty()) {
      return failed_precondition("the source " + spec_.from_host + ":" + f.src() + " changed during the copy (" +
                                 change +
                                 "); nothing of it was committed: copy it again once it is no longer being "
                                 "written");
    }
    Result<nlohmann::json> args = nlohmann::json();
    std::string hashes;
    {
      std::lock_guard<std::mutex> lock(mu_);  // the hashes are complete: every chunk's write was answered
      args = recv_commit_args(f, spec_.chunk_size, &hashes);
    }
    if (!args.ok()) return args.status();
    return peer.send("recv.commit", *args, std::move(hashes), kCallTimeoutMs);
  }
  p->len = copy_chunk_len(f.size, spec_.chunk_size, item.index);
  auto src = open_source(f);
  auto data = src.ok() ? read_chunk(src->get(), f.src(), item.index * spec_.chunk_size, p->len, &p->hash)
                       : Result<std::string>(src.status());
  if (!data.ok())
    return Status(data.status().code() == StatusCode::kUnavailable ? StatusCode::kInternal : data.status().code(),
                  "reading " + f.src() + " on " + spec_.from_host + ": " + data.status().message());
  {
    std::lock_guard<std::mutex> lock(mu_);
    f.hashes[static_cast<size_t>(item.index)] = p->hash;
    bytes_sent_ += p->len;
  }
  return peer.send("recv.write", recv_write_args(f, item.index, spec_.chunk_size, p->hash), std::move(data).value(),
                   kCallTimeoutMs);
}

Status Pusher::settle(const Pending& p, const protocol::Frame& reply) {
  CopyFile& f = plan_.files[p.item.file];
  Status err = reply.type == protocol::FrameType::kError ? protocol::status_from_error_frame(reply) : Status();
  std::lock_guard<std::mutex> lock(mu_);
  if (p.item.index >= 0) {
    if (!err.ok()) {
      if (err.code() == StatusCode::kDataLoss &&
          ++corrupt_retries_[{p.item.file, p.item.index}] <= kMaxCorruptRetries) {
        queue_.push_front(p.item);  // damaged on the way: send it again
        bytes_resent_ += p.len;
        cv_.notify_all();
        return Status();
      }
      return on_dest(err);
    }
    f.dest_have[p.item.index] = p.hash;
    bytes_done_ += p.len;
    last_settled_ms_ = mono_ms();
    if (--f.remaining == 0) queue_.push_back({p.item.file, -1});
    cv_.notify_all();
    return Status();
  }
  if (!err.ok()) return on_dest(err.with_context("committing " + f.dest()));
  auto commit = protocol::RecvCommitReply::from_json(reply.header);
  if (!commit.ok()) return data_loss(dest_name() + ": " + commit.status().message());
  std::vector<int64_t> bad = recv_commit_bad(*commit, f);
  if (bad.empty()) {
    f.committed = true;
    ++committed_;
  } else {
    // Bytes went bad on the destination's disk after they were verified: send them again.
    for (int64_t b : bad) {
      f.dest_have.erase(b);
      queue_.push_back({p.item.file, b});
      ++f.remaining;
      bytes_done_ -= copy_chunk_len(f.size, spec_.chunk_size, b);
    }
  }
  cv_.notify_all();
  return Status();
}

void Pusher::stream_main(int stream) {
  std::deque<Pending> inflight;
  auto& peer = peers_[stream];
  for (;;) {
    if (!peer) {
      // Connect only when there is work for this stream.
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty() || committed_ == plan_.files.size(); });
        if (stop_ || committed_ == plan_.files.size()) return;
      }
      auto p = connect(stream);
      if (!p.ok()) return fail(p.status());
      peer = std::move(p).value();
    }
    Status link;  // kUnavailable once the link broke
    while (static_cast<int>(inflight.size()) < kWindow) {
      Item item;
      if (!take(&item)) break;
      Pending p;
      Status s = send_item(*peer, item, &p);
      inflight.push_back(p);
      if (s.code() == StatusCode::kUnavailable) {
        link = s;
        break;
      }
      if (!s.ok()) return fail(s);
    }
    if (link.ok() && inflight.empty()) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty() || committed_ == plan_.files.size(); });
      if (stop_ || committed_ == plan_.files.size()) return;
      continue;
    }
    if (link.ok()) {
      int timeout = inflight.front().item.index < 0 ? kSlowOpTimeoutMs : kCallTimeoutMs;
      auto r = peer->receive(timeout);
      if (!r.ok()) {
        link = r.status();
      } else {
        Pending p = inflight.front();
        inflight.pop_front();
        Status s = settle(p, *r);
        if (!s.ok()) return fail(s);
      }
    }
    if (stopping()) return;
    if (!link.ok()) {
      // Everything in flight on this link goes back to the queue; each chunk of it
      // crosses again (at most kWindow chunks per stream and outage).
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = inflight.rbegin(); it != inflight.rend(); ++it) {
          queue_.push_front(it->item);
          bytes_resent_ += it->len;
        }
        cv_.notify_all();
      }
      inflight.clear();
      peer.reset();
      // Links that come back but carry nothing are no better than none.
      int64_t idle_ms;
      {
        std::lock_guard<std::mutex> lock(mu_);
        idle_ms = mono_ms() - last_settled_ms_;
      }
      if (idle_ms > spec_.give_up_s * 1000) {
        return fail(unavailable("nothing reached " + dest_name() + " for " + std::to_string(idle_ms / 1000) +
                                " s: " + link.message()));
      }
      say("ferry-push: stream " + std::to_string(stream + 1) + " lost " + dest_name() + " (" + link.message() +
          "); reconnecting");
    }
  }
}

PushProgress Pusher::progress() {
  std::lock_guard<std::mutex> lock(mu_);
  PushProgress p;
  p.bytes_done = bytes_done_;
  p.bytes_total = plan_.bytes_total;
  p.bytes_sent = bytes_sent_;
  p.bytes_resent = bytes_resent_;
  p.bytes_skipped = bytes_skipped_;
  p.elapsed_ms = mono_ms() - started_ms_;
  p.rate = p.elapsed_ms > 0 ? (bytes_done_ - bytes_skipped_) * 1000.0 / p.elapsed_ms : 0;
  p.files_done = static_cast<int>(committed_);
  p.files = static_cast<int>(plan_.files.size());
  return p;
}

// A source file opened beneath the source folder the push listed, so a folder swapped
// for a symlink since is never read through (review F26); a single-file source is the
// file listed itself.
Result<UniqueFd> Pusher::open_source(const CopyFile& f) const {
  if (!plan_.is_dir) {
    UniqueFd fd(::fcntl(source_fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!fd.ok()) return errno_status("open " + source_, errno);
    return fd;
  }
  return open_beneath_at(source_fd_.get(), source_, f.rel, O_RDONLY);
}

Result<PushResult> Pusher::run() {
  started_ms_ = mono_ms();
  auto source = resolve_data_path(spec_.workdir, spec_.from);
  if (!source.ok()) return source.status();
  source_ = *source;
  // Non-blocking: a FIFO named as a source is refused, not waited on.
  auto opened = open_data_path(spec_.workdir, spec_.from, O_RDONLY | O_NONBLOCK);
  if (!opened.ok()) return opened.status();
  source_fd_ = std::move(opened).value();
  auto listing = list_source(source_fd_.get(), source_);
  if (!listing.ok()) return listing.status();
  auto plan = plan_copy(std::move(*listing), source_, spec_.to, spec_.chunk_size, spec_.owner);
  if (!plan.ok()) return plan.status();
  plan_ = std::move(*plan);
  say("ferry-push: " + spec_.from_host + ":" + spec_.from + " → " + spec_.to_host + ":" + spec_.to + " over ssh to " +
      dest_name() + ": " + std::to_string(plan_.files.size()) + " file(s), " + std::to_string(plan_.bytes_total) +
      " bytes, up to " + std::to_string(spec_.streams) + " stream(s)");

  peers_.resize(static_cast<size_t>(std::max(1, spec_.streams)));
  Status s = with_peer(0, [this](AgentPeer& peer) { return prepare(peer); });
  if (!s.ok()) return s;
  queue_work();
  last_settled_ms_ = mono_ms();
  say(format_push_progress(progress()));

  // No more streams than there are chunks to send.
  int streams = static_cast<int>(std::min<size_t>(peers_.size(), std::max<size_t>(1, queue_.size())));
  std::vector<std::thread> threads;
  streams_running_ = streams;
  for (int i = 0; i < streams; ++i) {
    threads.emplace_back([this, i] {
      stream_main(i);
      std::lock_guard<std::mutex> lock(mu_);
      --streams_running_;
      cv_.notify_all();
    });
  }
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(kProgressEveryMs), [this] { return streams_running_ == 0; })) {
        break;
      }
    }
    say(format_push_progress(progress()));
    std::string why = superseded_ ? superseded_() : std::string();
    if (!why.empty()) fail(cancelled(why));
  }
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.ok()) return failure_;
  }

  PushResult result;
  result.manifest_hash = copy_manifest_hash(plan_.files);
  result.bytes_total = plan_.bytes_total;
  if (plan_.is_dir) {
    // Files an earlier ferry copy wrote there that the source lacks are removed; the rest stays. Both are named.
    std::vector<std::string> keep;
    for (const auto& f : plan_.files) keep.push_back(f.rel);
    s = with_peer(0, [this, &result, &keep](AgentPeer& peer) {
      auto r = peer.call(protocol::RecvFinishDirArgs::kOp,
                         protocol::RecvFinishDirArgs{spec_.to, result.manifest_hash, true}.to_json(), kCallTimeoutMs,
                         encode_keep_list(keep));
      if (!r.ok()) return on_dest(r.status());
      for (const auto& line : prune_report_lines(dest_name(), prune_report_from_json(r->header))) {
        say("ferry-push: " + line);
      }
      return Status();
    });
    if (!s.ok()) return s;
  }
  say(format_push_progress(progress()));
  for (auto& p : peers_) {
    if (p) p->close();
  }
  return result;
}

}  // namespace

Result<std::vector<std::string>> push_ssh_command(const PushSpec& spec, const std::string& home,
                                                  const std::string& account_home) {
  // sshd hands this text to the destination's login shell, which may be csh or fish.
  auto remote =
      login_shell_command("printf '" + std::string(kPushAgentReady) + "\\n' && exec " + shell_quote(spec.dest_agent) +
                          " serve --workdir " + shell_quote(spec.dest_workdir));
  if (!remote.ok()) return remote.status().with_context("ssh to " + spec.to_host);
  std::vector<std::string> argv = {spec.ssh};
  // OpenSSH finds ~/.ssh through the password database, not $HOME: when the two
  // differ (a host whose sessions get their own HOME) name the config in $HOME.
  // An account /etc/passwd lacks (LDAP, SSSD) gets no -F: we cannot tell where ssh
  // looks, and -F would make it skip /etc/ssh/ssh_config (host-based auth, GSSAPI).
  if (!home.empty() && !account_home.empty() && home != account_home && path_exists(home + "/.ssh/config")) {
    argv.insert(argv.end(), {"-F", home + "/.ssh/config"});
  }
  for (const std::string& o :
       std::vector<std::string>{"BatchMode=yes", "ConnectTimeout=" + std::to_string(kSshConnectTimeoutS),
                                "ServerAliveInterval=" + std::to_string(kSshAliveEveryS),
                                "ServerAliveCountMax=" + std::to_string(kSshAliveCount), "ClearAllForwardings=yes",
                                // Checkpoints go only to a destination whose key is known, whatever
                                // the source's ssh_config says (accept-new, no).
                                "StrictHostKeyChecking=yes"}) {
    argv.insert(argv.end(), {"-o", o});
  }
  argv.insert(argv.end(), {"-T", "-x", "-a"});
  if (spec.port != 22) argv.insert(argv.end(), {"-p", std::to_string(spec.port)});
  if (!spec.user.empty()) argv.insert(argv.end(), {"-l", spec.user});
  argv.insert(argv.end(), {"--", spec.address, *remote});
  return argv;
}

Result<PushResult> run_push(const PushSpec& spec, std::FILE* log, std::function<std::string()> superseded) {
  Pusher p(spec, log, std::move(superseded));
  return p.run();
}

}  // namespace ferry
