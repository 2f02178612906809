// LaneSocket: what one host's transports in one coordinator share: where the host's
// main agent accepts data lanes, as its main link learned it (agents/lane_listener.h),
// and the turns its links take to open an SSH session.
//
// The main link's SshTransport publishes the path once its agent runs; a data
// lane's SshTransport waits for it (bounded) and opens a direct-streamlocal
// channel to it, so the lane starts no login shell. A lane that finds nothing in
// time, or cannot open the channel, starts its own agent by exec as before.
//
// Thread contract: any thread (each HostConnection runs its transport on its own).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

namespace ferry {

class LaneSocket {
 public:
  /// The main link's agent listens at `path` (absolute, on the host).
  void publish(std::string path) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      path_ = std::move(path);
    }
    cv_.notify_all();
  }
  /// The path, waiting up to `timeout_ms` for one; "" when none came.
  std::string wait(int timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return !path_.empty(); });
    return path_;
  }

  /// At most this many of a host's links handshake at once: sshd's MaxStartups
  /// (10:30:100 by default) starts dropping unauthenticated connections past 10, so a
  /// copy warming 16 streams on both hosts at once reconnected spuriously (review F19).
  static constexpr int kMaxHandshakes = 4;

  /// A turn to handshake, held while the object lives; waits for one.
  class HandshakeTurn {
   public:
    explicit HandshakeTurn(LaneSocket& s) : s_(s) {
      std::unique_lock<std::mutex> lock(s_.mu_);
      s_.cv_.wait(lock, [this] { return s_.handshaking_ < kMaxHandshakes; });
      ++s_.handshaking_;
      s_.most_handshaking_ = std::max(s_.most_handshaking_, s_.handshaking_);
    }
    ~HandshakeTurn() {
      {
        std::lock_guard<std::mutex> lock(s_.mu_);
        --s_.handshaking_;
      }
      s_.cv_.notify_all();
    }
    HandshakeTurn(const HandshakeTurn&) = delete;
    HandshakeTurn& operator=(const HandshakeTurn&) = delete;

   private:
    LaneSocket& s_;
  };

  /// The most turns held at once so far (tests).
  int most_handshaking() {
    std::lock_guard<std::mutex> lock(mu_);
    return most_handshaking_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string path_;
  int handshaking_ = 0;
  int most_handshaking_ = 0;
};

}  // namespace ferry
