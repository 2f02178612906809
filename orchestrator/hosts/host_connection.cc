#include "orchestrator/hosts/host_connection.h"

#include <poll.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <map>
#include <random>
#include <vector>

#include "base/clock.h"
#include "protocol/body_buffers.h"

namespace ferry {
namespace {

/// Most bytes asked of the transport at once (the decoder bounds it further).
constexpr size_t kMaxReadBytes = 8u << 20;
/// A lane that could not open rides the main stream this long before it is tried again.
constexpr double kLaneRetryS = 10;
/// While a batch of calls goes out, replies are read and pings sent at least this often.
constexpr double kServiceEveryS = 0.1;

}  // namespace

HostConnection::HostConnection(boost::asio::io_context& io, std::string host, TransportFactory factory,
                               ConnectionOptions options)
    : io_(io), host_(std::move(host)), factory_(std::move(factory)), options_(options) {}

HostConnection::~HostConnection() { stop(); }

void HostConnection::start(StateFn on_state) {
  on_state_ = std::move(on_state);
  thread_ = std::thread([this] { run(); });
}

void HostConnection::request_stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void HostConnection::stop() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

nlohmann::json HostConnection::hello() const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  return hello_;
}

void HostConnection::call(const std::string& op, nlohmann::json args, ReplyFn fn, std::string body, int lane) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    boost::asio::post(io_, [fn] { fn(cancelled("connection closed")); });
    return;
  }
  queue_.push_back({protocol::make_request(next_id_++, op, std::move(args), std::move(body)), std::move(fn), lane});
  lock.unlock();
  cv_.notify_all();
}

void HostConnection::close_lane(int lane) {
  if (lane == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    queue_.push_back({protocol::Frame(), nullptr, lane, true});
  }
  cv_.notify_all();
}

void HostConnection::fail_all(std::deque<Pending>& calls, const Status& s) {
  for (auto& p : calls) {
    if (p.close_lane) continue;  // not a call
    boost::asio::post(io_, [fn = std::move(p.fn), s] { fn(s); });
  }
  calls.clear();
}

bool HostConnection::given_up() const {
  std::lock_guard<std::mutex> lock(mu_);
  return given_up_;
}

void HostConnection::post_state(bool connected, const std::string& why) {
  if (!on_state_) return;
  auto self = shared_from_this();
  boost::asio::post(io_, [self, connected, why] { self->on_state_(connected, why); });
}

bool HostConnection::wait_for(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!stopping_) {
    // Calls made while we are cut off fail at once: the caller retries on its own clock.
    if (!queue_.empty()) {
      std::deque<Pending> q;
      q.swap(queue_);
      lock.unlock();
      std::string why = last_error_.empty() ? "" : ": " + last_error_;
      fail_all(q, given_up_ ? Status(StatusCode::kDeadlineExceeded, "gave up on host '" + host_ + "'" + why)
                            : unavailable("host '" + host_ + "' is not connected" + why));
      lock.lock();
      continue;
    }
    if (cv_.wait_until(lock, until) == std::cv_status::timeout) break;
  }
  return !stopping_;
}

void HostConnection::run() {
  std::mt19937 rng(std::random_device{}());
  double backoff = options_.backoff_initial_s;
  double failing_since = 0;
  bool was_connected = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    std::unique_ptr<AgentTransport> transport = factory_();
    Status s = transport->open();
    const bool opened = s.ok();
    if (opened) {
      double opened_at = mono_s();
      SessionEnd end;
      bool keep_going = session(*transport, &end);
      if (!keep_going) {
        transport->close();
        break;
      }
      was_connected = was_connected || end.greeted;
      if (end.greeted && mono_s() - opened_at >= options_.dead_after_s) {
        // A link that held a while and dropped: said before the close, which may
        // wait seconds on a dead link; then reconnect at once, count afresh.
        post_state(false, end.why);
        transport->close();
        backoff = options_.backoff_initial_s;
        failing_since = 0;
        continue;
      }
      // A link that fails as soon as it opens (an agent that exits at once, a
      // frame it refuses) fails again if retried now: back off, toward give_up.
      s = unavailable(end.why);
    }
    if (failing_since == 0) failing_since = mono_s();
    // A refused host key, a failed login or a bad setting (address, user, ssh
    // config, ciphers, a login rc that talks) will not heal by itself: stop now.
    bool permanent = s.code() == StatusCode::kPermissionDenied || s.code() == StatusCode::kNotFound ||
                     s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kInvalidArgument ||
                     // Never reached: a name that does not resolve, a port that refuses (not silence).
                     (!was_connected && options_.first_failure_is_final && transport->nobody_there());
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_error_ = s.message();
      if (permanent || mono_s() - failing_since >= options_.give_up_s) given_up_ = true;
    }
    // After given_up_ is set, so the listener can ask whether this failure is final
    // (a link lost at once is said here too, not by lose()), and before the close.
    post_state(false, s.message());
    if (opened) transport->close();
    // Exponential backoff with full jitter: many coordinators do not reconnect in step.
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    if (!wait_for(backoff * jitter(rng))) break;
    backoff = std::min(backoff * 2, options_.backoff_max_s);
  }
  std::deque<Pending> q;
  {
    std::lock_guard<std::mutex> lock(mu_);
    q.swap(queue_);
  }
  fail_all(q, cancelled("connection to '" + host_ + "' closed"));
}

// One stream's state, on the connection thread: its transport, the frame decoder, the
// calls awaiting replies (and their ops, to name them if the link dies), when bytes last
// went out and came in.
struct HostConnection::Stream {
  Stream(AgentTransport& transport, bool lane) : t(transport), is_lane(lane), last_rx(mono_s()), last_tx(mono_s()) {}
  AgentTransport& t;
  const bool is_lane;        // a data lane: no pings, so liveness is judged only while calls are awaited
  bool greeted = true;       // a lane's hello is answered (its reply is read like any other)
  bool open = true;          // a lane still opening (AgentTransport::poll_open) is written nothing
  std::deque<Pending> held;  // calls made while it opens: sent once it is open
  protocol::FrameDecoder decoder;
  std::map<uint32_t, ReplyFn> in_flight;
  std::map<uint32_t, std::string> in_flight_op;
  double last_rx, last_tx;
  uint32_t ping_id = 0;

  // Reads go straight into the decoder (a chunk's body in place).
  Result<size_t> read_into(int timeout_ms) {
    auto [dst, room] = decoder.prepare(kMaxReadBytes);
    auto n = t.read_some(dst, room, timeout_ms);
    if (n.ok()) decoder.commit(*n);
    return n;
  }
};

// One link's state: the main stream, and the data lanes opened on it.
struct HostConnection::Session {
  explicit Session(AgentTransport& transport) : main(transport, false) {}
  struct Lane {
    std::unique_ptr<AgentTransport> t;
    std::unique_ptr<Stream> s;  // destroyed before its transport
  };
  Stream main;
  std::map<int, Lane> lanes;
  std::map<int, double> riding_main;  // lanes that could not open: their calls go on the main stream until then

  // Silence is counted only while the thread listens: time spent sending a batch
  // (lanes opening, chunks written into a slow link) is time no stream could be heard.
  void pause_watchdogs(double seconds) {
    const double now = mono_s();
    main.last_rx = std::min(main.last_rx + seconds, now);
    for (auto& [n, lane] : lanes) lane.s->last_rx = std::min(lane.s->last_rx + seconds, now);
  }

  bool awaiting() const {
    if (!main.in_flight.empty()) return true;
    for (const auto& [n, lane] : lanes)
      if (!lane.s->in_flight.empty() || !lane.s->open) return true;
    return false;
  }
};

void HostConnection::fail_in_flight(Stream& s, const Status& why) {
  std::deque<Pending> q;
  q.swap(s.held);
  for (auto& [id, fn] : s.in_flight) q.push_back({protocol::Frame(), std::move(fn)});
  s.in_flight.clear();
  s.in_flight_op.clear();
  fail_all(q, why);
}

void HostConnection::drop_lane(Session& s, int lane, const Status& why) {
  auto it = s.lanes.find(lane);
  if (it == s.lanes.end()) return;
  fail_in_flight(*it->second.s,
                 Status(why.code(), "lane " + std::to_string(lane) + " to host '" + host_ + "': " + why.message()));
  it->second.s.reset();
  it->second.t->close();
  s.lanes.erase(it);
}

void HostConnection::lose(Session& s, SessionEnd* end, const std::string& why) {
  const Status lost = unavailable("link to host '" + host_ + "' lost: " + why);
  fail_in_flight(s.main, lost);
  while (!s.lanes.empty()) drop_lane(s, s.lanes.begin()->first, lost);
  end->why = why;  // said by run(), once it knows whether this failure is final
}

// The handshake: the agent's hello, whose protocol version must match ours.
Result<nlohmann::json> HostConnection::greet(Stream& s) {
  std::string hello = protocol::encode_frame(protocol::make_request(0, "hello"));
  Status st = s.t.write_all(hello.data(), hello.size());
  const double deadline = mono_s() + options_.dead_after_s;
  nlohmann::json reply;
  while (st.ok() && reply.is_null()) {
    if (mono_s() > deadline) return Status(StatusCode::kDeadlineExceeded, "no hello from agent");
    auto n = s.read_into(100);
    if (!n.ok()) return n.status();
    for (;;) {
      auto f = s.decoder.next();
      if (!f.ok()) return f.status();
      if (!f->has_value()) break;
      if ((*f)->type == protocol::FrameType::kReply && (*f)->request_id == 0) reply = (*f)->header;
      if ((*f)->type == protocol::FrameType::kError && (*f)->request_id == 0)
        st = protocol::status_from_error_frame(**f);
    }
  }
  if (!st.ok()) return st;
  FERRY_RETURN_IF_ERROR(check_hello(reply));
  return reply;
}

Status HostConnection::check_hello(const nlohmann::json& reply) const {
  const auto version = reply.find("protocol");
  if (version == reply.end() || !version->is_number_unsigned() ||
      version->get<uint32_t>() != protocol::kProtocolVersion) {
    return failed_precondition("agent on '" + host_ + "' speaks protocol " +
                               (version == reply.end() ? "none" : version->dump().substr(0, 100)) +
                               ", this coordinator speaks " + std::to_string(protocol::kProtocolVersion));
  }
  return Status();
}

// The stream a call on `lane` goes out on: the main one, or the lane's, opened now if
// it is not yet. A new lane's hello goes out first and its calls right after it: its
// reply is checked when it comes (receive), so nothing here waits for the agent to
// take the lane up. A lane still opening (an exec behind a login shell) holds its
// calls until receive_all finds it open (finish_opening): nothing here waits for that
// either (review P5). A lane that cannot open (a server that refuses more channels, a
// transport without lanes) rides the main stream for kLaneRetryS: slower, not wrong.
HostConnection::Stream& HostConnection::stream_for(Session& s, int lane) {
  if (lane == 0) return s.main;
  auto riding = s.riding_main.find(lane);
  if (riding != s.riding_main.end()) {
    if (mono_s() < riding->second) return s.main;
    s.riding_main.erase(riding);
  }
  auto it = s.lanes.find(lane);
  if (it != s.lanes.end()) return *it->second.s;
  auto t = s.main.t.open_lane();
  Result<bool> ready = t.ok() ? (*t)->poll_open() : Result<bool>(t.status());
  if (ready.ok()) {
    auto stream = std::make_unique<Stream>(**t, true);
    stream->greeted = false;
    stream->open = *ready;
    if (!stream->open || write_hello(*stream).ok()) {
      Session::Lane& opened = s.lanes[lane];
      opened.t = std::move(*t);
      opened.s = std::move(stream);
      return *opened.s;
    }
    stream.reset();
  }
  if (t.ok()) (*t)->close();
  s.riding_main[lane] = mono_s() + kLaneRetryS;
  return s.main;
}

Status HostConnection::write_hello(Stream& s) {
  const std::string hello = protocol::encode_frame(protocol::make_request(0, "hello"));
  return s.t.write_all(hello.data(), hello.size());
}

// Takes a lane's opening on (AgentTransport::poll_open). Open: its hello and the calls
// it held go out. Unable to open: nothing reached an agent, so its calls go on the main
// stream, which the lane rides for kLaneRetryS. The error returned is the main stream's.
Status HostConnection::finish_opening(Session& s, int lane) {
  Stream& ls = *s.lanes.at(lane).s;
  auto ready = ls.t.poll_open();
  if (ready.ok() && !*ready) return Status();
  if (!ready.ok()) {
    std::deque<Pending> held;
    held.swap(ls.held);
    drop_lane(s, lane, ready.status());
    s.riding_main[lane] = mono_s() + kLaneRetryS;
    for (Pending& p : held) FERRY_RETURN_IF_ERROR(send(s.main, p));
    return Status();
  }
  ls.open = true;
  Status st = write_hello(ls);
  while (st.ok() && !ls.held.empty()) {
    Pending p = std::move(ls.held.front());
    ls.held.pop_front();
    st = send(ls, p);
  }
  if (!st.ok()) drop_lane(s, lane, st);
  return Status();
}

// Writes one call. A call too large to encode fails alone; a failed write is the stream's.
Status HostConnection::send(Stream& s, Pending& p) {
  auto encoded = protocol::encode_frame_prefix_checked(p.frame);
  if (!encoded.ok()) {
    // Too large to send (a user's value in a header): that call fails, the link stays.
    Status why(encoded.status().code(), "host '" + host_ + "': " + encoded.status().message());
    boost::asio::post(io_, [fn = std::move(p.fn), why] { fn(why); });
    return Status();
  }
  std::string prefix = std::move(encoded).value();
  // A lane's silence counts from its first awaited call: an idle lane hears nothing.
  if (s.is_lane && s.in_flight.empty()) s.last_rx = mono_s();
  s.in_flight[p.frame.request_id] = std::move(p.fn);
  if (p.frame.header.contains("op") && p.frame.header["op"].is_string()) {
    s.in_flight_op[p.frame.request_id] = p.frame.header["op"].get<std::string>();
  }
  Status w = s.t.write_all(prefix.data(), prefix.size());
  if (w.ok() && !p.frame.body.empty()) w = s.t.write_all(p.frame.body.data(), p.frame.body.size());
  // Sent: its buffer takes the next chunk read on any link (no allocation, no zero-fill).
  protocol::recycle_body_buffer(std::move(p.frame.body));
  if (w.ok()) s.last_tx = mono_s();
  return w;
}

// A ping when one is due; its reply only proves liveness.
Status HostConnection::ping_if_due(Stream& s) {
  const double now = mono_s();
  if (now - s.last_tx < options_.ping_every_s) return Status();
  // Ids with the top bit set are pings.
  std::string bytes = protocol::encode_frame(protocol::make_request(0x80000000u | ++s.ping_id, "ping"));
  FERRY_RETURN_IF_ERROR(s.t.write_all(bytes.data(), bytes.size()));
  s.last_tx = now;
  return Status();
}

// Reads what the agent sent on one stream (waiting up to `wait_ms`) and hands each
// reply to its caller on the io thread; `got`: whether any byte came. A dead or
// misbehaving agent is an error: the stream is lost.
Status HostConnection::receive(Stream& s, int wait_ms, bool* got) {
  *got = false;
  auto n = s.read_into(wait_ms);
  if (!n.ok()) return n.status();
  if (*n == 0) {
    const bool judged = !s.is_lane || !s.in_flight.empty();
    if (judged && mono_s() - s.last_rx > options_.dead_after_s) {
      // Name what was awaited (review F20.2): agents send heartbeats during long
      // operations, so this is a dead agent or link, not a slow commit or hash.
      std::string awaited;
      for (const auto& [id, op] : s.in_flight_op) awaited += (awaited.empty() ? "" : ", ") + op;
      return unavailable("no data from the agent for " + std::to_string(static_cast<int>(options_.dead_after_s)) +
                         " s" +
                         (awaited.empty() ? "" : " (awaiting " + awaited.substr(0, 200) + "; no heartbeat either)"));
    }
    return Status();
  }
  *got = true;
  s.last_rx = mono_s();
  for (;;) {
    auto f = s.decoder.next();
    if (!f.ok()) return unavailable("bad frame from agent: " + f.status().message());
    if (!f->has_value()) return Status();
    protocol::Frame frame = std::move(**f);
    if (frame.type == protocol::FrameType::kEvent) continue;  // heartbeats of a long operation
    if (frame.type == protocol::FrameType::kError && frame.request_id == 0) {
      // The agent says why it is closing the link (a frame it could not take).
      return unavailable("the agent closed the link: " + protocol::status_from_error_frame(frame).message());
    }
    if (frame.request_id == 0 && !s.greeted) {  // a new lane's hello
      FERRY_RETURN_IF_ERROR(check_hello(frame.header));
      s.greeted = true;
      continue;
    }
    auto it = s.in_flight.find(frame.request_id);
    if (it == s.in_flight.end()) continue;  // pings, or replies to calls already failed
    ReplyFn fn = std::move(it->second);
    s.in_flight.erase(it);
    s.in_flight_op.erase(frame.request_id);
    if (frame.type == protocol::FrameType::kError) {
      Status err = protocol::status_from_error_frame(frame);
      boost::asio::post(io_, [fn = std::move(fn), err] { fn(err); });
    } else {
      auto shared = std::make_shared<protocol::Frame>(std::move(frame));
      boost::asio::post(io_, [fn = std::move(fn), shared] { fn(std::move(*shared)); });
    }
  }
}

// Reads every stream that awaits a reply. With lanes open each is read without
// waiting, and when none had bytes (and `may_wait`) the thread waits on all of them
// at once. An error is the main stream's (the link is lost); a lane's drops that lane.
Status HostConnection::receive_all(Session& s, bool may_wait) {
  bool got = false;
  if (s.lanes.empty()) return receive(s.main, may_wait && s.awaiting() ? options_.poll_ms : 0, &got);
  FERRY_RETURN_IF_ERROR(receive(s.main, 0, &got));
  bool got_any = got;
  for (auto it = s.lanes.begin(); it != s.lanes.end();) {
    const int lane = it->first;
    Stream& ls = *(it++)->second.s;
    if (!ls.open) {
      FERRY_RETURN_IF_ERROR(finish_opening(s, lane));
      continue;
    }
    if (ls.in_flight.empty()) continue;
    Status st = receive(ls, 0, &got);
    if (!st.ok()) drop_lane(s, lane, st);
    got_any = got_any || got;
  }
  if (may_wait && !got_any && s.awaiting()) wait_readable(s);
  return Status();
}

// Waits up to poll_ms for bytes on any stream that awaits a reply. Lanes of one SSH
// session share its socket, so this is usually one descriptor however many lanes.
void HostConnection::wait_readable(Session& s) {
  std::vector<pollfd> fds;
  bool all_have_fds = true;
  auto add = [&](const Stream& st) {
    int fd = st.t.poll_fd();
    if (fd < 0) all_have_fds = false;
    for (const pollfd& p : fds)
      if (p.fd == fd) return;
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
  };
  add(s.main);
  for (const auto& [n, lane] : s.lanes)
    if (!lane.s->in_flight.empty() || !lane.s->open) add(*lane.s);
  if (all_have_fds) {
    (void)::poll(fds.data(), fds.size(), options_.poll_ms);
    return;
  }
  // A transport that cannot be waited on (in-process agents answer at once): a slice
  // on the queue, so a new call still goes out at once.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(options_.poll_ms), [this] { return stopping_ || !queue_.empty(); });
}

bool HostConnection::session(AgentTransport& t, SessionEnd* end) {
  Session s(t);
  auto hello = greet(s.main);
  if (!hello.ok()) {
    lose(s, end, hello.status().message());
    return true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    hello_ = *hello;
    given_up_ = false;
    last_error_.clear();
  }
  end->greeted = true;
  post_state(true, "");
  s.main.last_rx = s.main.last_tx = mono_s();
  for (;;) {
    std::deque<Pending> out;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Nothing awaited: wait for work here, not in the transport, so a call made now
      // goes out at once rather than after the transport's poll slice. An idle link
      // sleeps until its next ping is due (review F19: it used to wake 20 times a
      // second for days); the ping's reply is read then, well within dead_after_s.
      if (!s.awaiting() && queue_.empty() && !stopping_) {
        const double wait_s = std::max(s.main.last_tx + options_.ping_every_s - mono_s(), 0.0);
        cv_.wait_for(lock, std::chrono::duration<double>(wait_s), [this] { return stopping_ || !queue_.empty(); });
      }
      if (stopping_) {
        lock.unlock();
        const Status closed = cancelled("connection to '" + host_ + "' closed");
        fail_in_flight(s.main, closed);
        while (!s.lanes.empty()) drop_lane(s, s.lanes.begin()->first, closed);
        return false;
      }
      out.swap(queue_);
    }
    double sending_since = mono_s();  // the thread sends, and hears nothing, since
    while (!out.empty()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) break;  // the calls not sent fail below, as the ones in flight
      }
      Pending p = std::move(out.front());
      out.pop_front();
      if (p.close_lane) {
        drop_lane(s, p.lane, cancelled("closed"));
        s.riding_main.erase(p.lane);
        continue;
      }
      Stream& stream = stream_for(s, p.lane);
      if (!stream.open) {
        stream.held.push_back(std::move(p));
        continue;
      }
      Status st = send(stream, p);
      if (!st.ok() && &stream != &s.main) {
        drop_lane(s, p.lane, st);
        st = Status();
      }
      // A long batch still hears the agent: replies are handed over, pings go out.
      if (st.ok() && mono_s() - sending_since >= kServiceEveryS) {
        s.pause_watchdogs(mono_s() - sending_since);
        st = ping_if_due(s.main);
        if (st.ok()) st = receive_all(s, false);
        sending_since = mono_s();
      }
      if (!st.ok()) {
        // The link is lost: so are the calls not sent yet.
        fail_all(out, unavailable("link to host '" + host_ + "' lost: " + st.message()));
        lose(s, end, st.message());
        return true;
      }
    }
    fail_all(out, cancelled("connection to '" + host_ + "' closed"));  // stopping: what was not sent
    s.pause_watchdogs(mono_s() - sending_since);
    Status st = ping_if_due(s.main);
    if (st.ok()) st = receive_all(s, true);
    if (!st.ok()) {
      lose(s, end, st.message());
      return true;
    }
  }
}

}  // namespace ferry
