// HostConnection: the coordinator's link to one host's agent, and its data lanes.
//
// Owns an AgentTransport on a thread of its own (libssh sessions must stay on
// one thread; pipes come along for uniformity). The io thread calls call();
// the connection thread writes the request, matches the reply by request id and
// posts the callback back to the io executor. Requests are pipelined. While a
// reply is awaited the thread reads the transport in poll_ms slices (replies are
// read straight into the frame decoder, a chunk's body in place); with none
// awaited it sleeps on its queue, so a new call goes out at once.
//
// Data lanes: a call may name a lane (1, 2, ...): a stream of its own to a fresh
// agent on the host, opened on first use by the transport (AgentTransport::open_lane;
// over SSH a channel of the same session) and served by this same thread, which
// waits on all of them at once (poll_fd). So a host costs one connection and one
// thread however many lanes a copy uses (review F19). A lane's hello and first calls
// go out together, so no lane waits on another's agent. A lane slow to open (over SSH
// without streamlocal forwarding, an exec whose login shell must run first) holds its
// calls while this thread goes on serving the other streams, and is polled until it is
// open (AgentTransport::poll_open; review P5); silence is judged only over
// the time the thread listens, so a long batch of writes is not taken for a dead
// link. A lane that cannot open has its calls ride the main stream for a while; a
// lane whose stream fails fails only its own calls, and the next call opens it
// again. When the main link is lost, its lanes go with it.
//
// Liveness: a ping every `ping_every_s`; no byte from the agent within `dead_after_s`
// means the link is dead: the transport is closed, pending calls fail with
// kUnavailable, and the thread reconnects with exponential backoff and jitter
// (a link that fails within `dead_after_s` of opening counts as a failure too, so an
// agent that dies at once is not restarted in a tight loop) until `give_up_s` of
// continuous failure, after which calls fail with
// kDeadlineExceeded. Failures no retry can fix (host key refused, authentication
// failed, agent missing) give up at once, and calls fail with their message; so
// does an unreachable host at the first try when first_failure_is_final is set.
// Detached jobs keep running through all of it.
//
// Thread contract: construct, call(), close_lane(), stop() on the io thread.
// Callbacks and state notifications run on the io thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "jobs/stage_runner.h"
#include "orchestrator/hosts/agent_transport.h"

namespace ferry {

struct ConnectionOptions {
  double give_up_s = 600;
  double ping_every_s = 5;
  double dead_after_s = 15;
  double backoff_initial_s = 0.5;
  double backoff_max_s = 10;
  int poll_ms = 5;  // while replies are awaited: how long the thread waits on the transport between queue checks
  // A host we never reached in this process and where nothing of ours runs yet:
  // an unresolvable name or a refused connection at the very first try (the
  // transport's nobody_there()) is a mistake to report now, not a drop to wait
  // out for give_up_s. Silence (timeouts) and later steps are still waited for.
  bool first_failure_is_final = false;
};

class HostConnection : public std::enable_shared_from_this<HostConnection> {
 public:
  using TransportFactory = std::function<std::unique_ptr<AgentTransport>()>;
  /// (connected, why) on every change; io thread.
  using StateFn = std::function<void(bool, const std::string&)>;

  HostConnection(boost::asio::io_context& io, std::string host, TransportFactory factory, ConnectionOptions options);
  ~HostConnection();

  void start(StateFn on_state);
  /// `lane` 0 is the main stream; any other names a data lane, opened on first use.
  void call(const std::string& op, nlohmann::json args, ReplyFn fn, std::string body = {}, int lane = 0);
  /// Closes data lane `lane` once the calls made before this are sent (the next call
  /// on it opens it again); its calls in flight, if any, fail.
  void close_lane(int lane);
  /// Closes the link and joins the thread; pending calls fail with kCancelled.
  void stop();
  /// The first half of stop(): asks the thread to end without waiting, so many
  /// connections can wind down at once before each is joined.
  void request_stop();
  /// Whether it stopped trying: a failure no retry fixes, or give_up_s of failures. Any thread.
  bool given_up() const;

  const std::string& host() const { return host_; }
  /// The agent's hello reply once connected (version, pid, hostname).
  nlohmann::json hello() const;

 private:
  struct Pending {
    protocol::Frame frame;
    ReplyFn fn;
    int lane = 0;
    bool close_lane = false;  // not a call: close `lane` here (close_lane())
  };
  struct SessionEnd {
    bool greeted = false;  // the handshake completed
    std::string why;       // why the link was lost
  };
  struct Stream;
  struct Session;
  void run();
  bool session(AgentTransport& transport, SessionEnd* end);  // false when stopping
  Result<nlohmann::json> greet(Stream& s);
  Status check_hello(const nlohmann::json& reply) const;
  Stream& stream_for(Session& s, int lane);
  Status write_hello(Stream& s);
  Status finish_opening(Session& s, int lane);
  Status send(Stream& s, Pending& p);
  Status ping_if_due(Stream& s);
  Status receive(Stream& s, int wait_ms, bool* got);
  Status receive_all(Session& s, bool may_wait);
  void wait_readable(Session& s);
  void drop_lane(Session& s, int lane, const Status& why);
  void fail_in_flight(Stream& s, const Status& why);
  void lose(Session& s, SessionEnd* end, const std::string& why);
  void fail_all(std::deque<Pending>& calls, const Status& s);
  void post_state(bool connected, const std::string& why);
  bool wait_for(double seconds);  // false when stopping

  boost::asio::io_context& io_;
  std::string host_;
  TransportFactory factory_;
  ConnectionOptions options_;
  StateFn on_state_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  bool given_up_ = false;
  std::string last_error_;  // why the last open() failed, for the calls that fail meanwhile
  nlohmann::json hello_;
  uint32_t next_id_ = 1;
  std::thread thread_;
};

}  // namespace ferry
