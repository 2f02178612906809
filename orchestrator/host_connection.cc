#include "orchestrator/host_connection.h"

#include <boost/asio/post.hpp>
#include <chrono>
#include <map>
#include <random>

#include "base/clock.h"
#include "protocol/body_buffers.h"

namespace ferry {
namespace {

/// Most bytes asked of the transport at once (the decoder bounds it further).
constexpr size_t kMaxReadBytes = 8u << 20;

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

void HostConnection::call(const std::string& op, nlohmann::json args, ReplyFn fn, std::string body) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    boost::asio::post(io_, [fn] { fn(cancelled("connection closed")); });
    return;
  }
  queue_.push_back({protocol::make_request(next_id_++, op, std::move(args), std::move(body)), std::move(fn)});
  lock.unlock();
  cv_.notify_all();
}

void HostConnection::fail_all(std::deque<Pending>& calls, const Status& s) {
  for (auto& p : calls) {
    boost::asio::post(io_, [fn = std::move(p.fn), s] { fn(s); });
  }
  calls.clear();
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
    if (s.ok()) {
      double opened_at = mono_s();
      SessionEnd end;
      bool keep_going = session(*transport, &end);
      transport->close();
      if (!keep_going) break;
      was_connected = was_connected || end.greeted;
      if (end.greeted && mono_s() - opened_at >= options_.dead_after_s) {
        // A link that held a while and dropped: reconnect at once, count afresh.
        backoff = options_.backoff_initial_s;
        failing_since = 0;
        continue;
      }
      // A link that fails as soon as it opens (an agent that exits at once, a
      // frame it refuses) fails again if retried now: back off, toward give_up.
      s = unavailable(end.why);
    } else {
      post_state(false, s.message());
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

// One session's state, on the connection thread: its transport, the frame decoder, the
// calls awaiting replies (and their ops, to name them if the link dies), when bytes last
// went out and came in.
struct HostConnection::Session {
  explicit Session(AgentTransport& transport) : t(transport), last_rx(mono_s()), last_tx(mono_s()) {}
  AgentTransport& t;
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

void HostConnection::lose(Session& s, SessionEnd* end, const std::string& why) {
  std::deque<Pending> q;
  for (auto& [id, fn] : s.in_flight) q.push_back({protocol::Frame(), std::move(fn)});
  s.in_flight.clear();
  fail_all(q, unavailable("link to host '" + host_ + "' lost: " + why));
  post_state(false, why);
  end->why = why;
}

// The handshake: the agent's hello, whose protocol version must match ours.
Status HostConnection::greet(Session& s) {
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
  if (!reply["protocol"].is_number_unsigned() || reply["protocol"].get<uint32_t>() != protocol::kProtocolVersion) {
    return failed_precondition("agent on '" + host_ + "' speaks protocol " + reply["protocol"].dump().substr(0, 100) +
                               ", this coordinator speaks " + std::to_string(protocol::kProtocolVersion));
  }
  std::lock_guard<std::mutex> lock(mu_);
  hello_ = reply;
  given_up_ = false;
  last_error_.clear();
  return Status();
}

// Writes the calls taken off the queue, then a ping when one is due. A write that fails
// loses the link.
Status HostConnection::send(Session& s, std::deque<Pending>& out) {
  for (auto& p : out) {
    auto encoded = protocol::encode_frame_prefix_checked(p.frame);
    if (!encoded.ok()) {
      // Too large to send (a user's value in a header): that call fails, the link stays.
      Status why(encoded.status().code(), "host '" + host_ + "': " + encoded.status().message());
      boost::asio::post(io_, [fn = std::move(p.fn), why] { fn(why); });
      continue;
    }
    std::string prefix = std::move(encoded).value();
    s.in_flight[p.frame.request_id] = std::move(p.fn);
    if (p.frame.header.contains("op") && p.frame.header["op"].is_string()) {
      s.in_flight_op[p.frame.request_id] = p.frame.header["op"].get<std::string>();
    }
    Status w = s.t.write_all(prefix.data(), prefix.size());
    if (w.ok() && !p.frame.body.empty()) w = s.t.write_all(p.frame.body.data(), p.frame.body.size());
    // Sent: its buffer takes the next chunk read on any link (no allocation, no zero-fill).
    protocol::recycle_body_buffer(std::move(p.frame.body));
    if (!w.ok()) return w;
    s.last_tx = mono_s();
  }
  const double now = mono_s();
  if (now - s.last_tx >= options_.ping_every_s) {
    // Ids with the top bit set are pings; their replies only prove liveness.
    std::string bytes = protocol::encode_frame(protocol::make_request(0x80000000u | ++s.ping_id, "ping"));
    FERRY_RETURN_IF_ERROR(s.t.write_all(bytes.data(), bytes.size()));
    s.last_tx = now;
  }
  return Status();
}

// Reads what the agent sent (waiting up to `wait_ms`) and hands each reply to its
// caller on the io thread. A dead or misbehaving agent loses the link.
Status HostConnection::receive(Session& s, int wait_ms) {
  auto n = s.read_into(wait_ms);
  if (!n.ok()) return n.status();
  if (*n == 0) {
    if (mono_s() - s.last_rx > options_.dead_after_s) {
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

bool HostConnection::session(AgentTransport& t, SessionEnd* end) {
  Session s(t);
  Status greeted = greet(s);
  if (!greeted.ok()) {
    lose(s, end, greeted.message());
    return true;
  }
  end->greeted = true;
  post_state(true, "");
  s.last_rx = s.last_tx = mono_s();
  for (;;) {
    std::deque<Pending> out;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Nothing awaited: wait for work here, not in the transport, so a call made now
      // goes out at once rather than after the transport's poll slice. An idle link
      // sleeps until its next ping is due (review F19: it used to wake 20 times a
      // second for days); the ping's reply is read then, well within dead_after_s.
      if (s.in_flight.empty() && queue_.empty() && !stopping_) {
        const double wait_s = std::max(s.last_tx + options_.ping_every_s - mono_s(), 0.0);
        cv_.wait_for(lock, std::chrono::duration<double>(wait_s), [this] { return stopping_ || !queue_.empty(); });
      }
      if (stopping_) {
        std::deque<Pending> q;
        for (auto& [id, fn] : s.in_flight) q.push_back({protocol::Frame(), std::move(fn)});
        s.in_flight.clear();
        fail_all(q, cancelled("connection to '" + host_ + "' closed"));
        return false;
      }
      out.swap(queue_);
    }
    Status st = send(s, out);
    if (st.ok()) st = receive(s, s.in_flight.empty() && out.empty() ? 0 : options_.poll_ms);
    if (!st.ok()) {
      lose(s, end, st.message());
      return true;
    }
  }
}

}  // namespace ferry
