// LaneSocket: where one host's main agent accepts data lanes, as its main link
// learned it (agents/lane_listener.h), shared by that host's transports in one
// coordinator.
//
// The main link's SshTransport publishes the path once its agent runs; a data
// lane's SshTransport waits for it (bounded) and opens a direct-streamlocal
// channel to it, so the lane starts no login shell. A lane that finds nothing in
// time, or cannot open the channel, starts its own agent by exec as before.
//
// Thread contract: any thread (each HostConnection runs its transport on its own).
#pragma once

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

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string path_;
};

}  // namespace ferry
