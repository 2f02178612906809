// InProcessTransport: an AgentTransport whose agent is an InProcessAgent over the host's
// workdir, so a HostConnection (and the scheduler above it) runs with its real framing,
// pipelining, pings and reconnects, and the agent's real request handling, without an
// agent process, pipes or SSH. Each open() starts a fresh agent, as each real link starts
// a fresh `ferry-agent serve`; jobs live in the folder's journal and outlast it.
//
// LinkFaults, shared by the test and every link to one host, break a link on a chosen
// request or refuse new links, to drive the reconnect and give-up paths.
//
// Thread contract: a transport is used by its connection's thread only (agent_transport.h);
// LinkFaults may be touched from any thread.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "base/clock.h"
#include "base/file_util.h"
#include "orchestrator/hosts/agent_transport.h"
#include "orchestrator/hosts/transport_factory.h"
#include "tests/support/in_process_agent.h"

namespace ferry::testing {

class LinkFaults {
 public:
  /// The next `times` requests for `op` never reach the agent: the link breaks instead.
  void drop_link_on(const std::string& op, int times = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    drops_[op] += times;
  }
  /// The next `times` links are refused at open(); kForever: every one from now on.
  void refuse_links(int times) {
    std::lock_guard<std::mutex> lock(mu_);
    refusals_ = times;
  }
  static constexpr int kForever = -1;
  /// Lanes opened from now on take every request and never answer: an agent that
  /// does not pick its lane up.
  void mute_new_lanes() {
    std::lock_guard<std::mutex> lock(mu_);
    mute_lanes_ = true;
  }
  bool lanes_muted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return mute_lanes_;
  }
  /// Lanes opened from now on take `seconds` to open (AgentTransport::poll_open), as an
  /// exec behind a slow login shell does; with `then_fail` they never open.
  void slow_lane_opening(double seconds, bool then_fail = false) {
    std::lock_guard<std::mutex> lock(mu_);
    lane_open_s_ = seconds;
    lane_open_fails_ = then_fail;
  }
  std::pair<double, bool> lane_opening() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {lane_open_s_, lane_open_fails_};
  }
  /// After the next dropped link no link opens again: a host gone for good.
  void stay_down_after_a_drop() {
    std::lock_guard<std::mutex> lock(mu_);
    stay_down_ = true;
  }

  int links_dropped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
  }
  int links_opened() const {
    std::lock_guard<std::mutex> lock(mu_);
    return opened_;
  }

  // The transport's side.
  /// Whether this request is let through; false counts a dropped link.
  bool lets_through(const protocol::Frame& request) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = drops_.find(request.header.value("op", ""));
    if (it == drops_.end() || it->second == 0) return true;
    --it->second;
    ++dropped_;
    if (stay_down_) refusals_ = kForever;
    return false;
  }
  /// Whether a new link may open; true counts it.
  bool lets_open() {
    std::lock_guard<std::mutex> lock(mu_);
    if (refusals_ == kForever) return false;
    if (refusals_ > 0) {
      --refusals_;
      return false;
    }
    ++opened_;
    return true;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int> drops_;  // by op: requests left to drop
  int refusals_ = 0;
  bool stay_down_ = false;
  bool mute_lanes_ = false;
  double lane_open_s_ = 0;
  bool lane_open_fails_ = false;
  int dropped_ = 0;
  int opened_ = 0;
};

class InProcessTransport : public AgentTransport {
 public:
  InProcessTransport(std::string workdir, std::shared_ptr<LinkFaults> faults)
      : workdir_(std::move(workdir)),
        faults_(std::move(faults)) {}

  Status open() override {
    if (!faults_->lets_open()) return unavailable("the test refused a link to " + workdir_);
    // As the real agent does before it serves (agent_main.cc).
    FERRY_RETURN_IF_ERROR(make_dirs(workdir_));
    agent_ = std::make_unique<InProcessAgent>(workdir_);
    return Status();
  }

  // Replies are ready as soon as their request is written, so a read never waits.
  Result<size_t> read_some(char* buf, size_t n, int) override {
    if (!agent_) return unavailable(broken_why_.empty() ? "not open" : broken_why_);
    const size_t take = std::min(n, inbox_.size());
    inbox_.copy(buf, take);
    inbox_.erase(0, take);
    return take;
  }

  Status write_all(const char* data, size_t n) override {
    if (!agent_) return unavailable(broken_why_.empty() ? "not open" : broken_why_);
    if (mute_) return Status();
    auto replies = agent_->take(data, n, [this](const protocol::Frame& f) { return faults_->lets_through(f); });
    if (!replies.ok()) {
      broken_why_ = replies.status().message();
      close();
      return replies.status();
    }
    inbox_ += *replies;
    return Status();
  }

  void close() override {
    agent_.reset();
    inbox_.clear();
  }

  std::string describe() const override { return "in-process agent in " + workdir_; }

  // A lane is another in-process agent over the same folder, with the same faults.
  Result<std::unique_ptr<AgentTransport>> open_lane() override {
    if (!agent_) return unavailable(describe() + ": not open");
    auto lane = std::make_unique<InProcessTransport>(workdir_, faults_);
    FERRY_RETURN_IF_ERROR(lane->open());
    lane->mute_ = faults_->lanes_muted();
    auto [open_s, fails] = faults_->lane_opening();
    lane->opens_at_ = mono_s() + open_s;
    lane->open_fails_ = fails;
    return std::unique_ptr<AgentTransport>(std::move(lane));
  }

  Result<bool> poll_open() override {
    if (mono_s() < opens_at_) return false;
    if (!open_fails_) return true;
    close();
    return unavailable(describe() + ": the test's lane never opened");
  }

 private:
  std::string workdir_;
  std::shared_ptr<LinkFaults> faults_;
  std::unique_ptr<InProcessAgent> agent_;  // null: not open, or broken
  std::string inbox_;                      // reply bytes not read yet
  std::string broken_why_;
  bool mute_ = false;    // a lane whose agent never answers (LinkFaults::mute_new_lanes)
  double opens_at_ = 0;  // a slow lane's opening (LinkFaults::slow_lane_opening)
  bool open_fails_ = false;
};

/// Transports for SchedulerOptions::transports: every host's links (data lanes too)
/// are InProcessTransports over its workdir, with `faults` by host name (none if not named).
inline TransportFactoryMaker in_process_transports(std::map<std::string, std::shared_ptr<LinkFaults>> faults = {}) {
  return [faults = std::move(faults)](const workflow::Host& host,
                                      const std::string& workdir) -> HostConnection::TransportFactory {
    auto it = faults.find(host.name);
    auto host_faults = it != faults.end() ? it->second : std::make_shared<LinkFaults>();
    return [workdir, host_faults] { return std::make_unique<InProcessTransport>(workdir, host_faults); };
  };
}

}  // namespace ferry::testing
