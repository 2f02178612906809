// CopyStage: moves a file or a checkpoint folder from one host to another,
// chunked, verified, resumable, in bounded memory (docs/DESIGN.md §3 step 4), either
// relayed through the coordinator or direct from host to host.
//
// This class chooses the route and hands the copy to its engine: RelayCopy
// (relay_copy.h) or DirectCopy (direct_copy.h), sharing a CopyContext.
//
// Route. `relay` always relays. `direct` sends host to host: the source host's
// agent runs `ferry-agent push` (direct_copy.h). It needs both
// hosts on ssh and the source reaching the destination's address:port, which
// the source's agent probes first (net.probe); otherwise it fails naming both.
// `auto` is direct when that probe succeeds and relay otherwise, and relays
// whenever keep_local is set (the coordinator needs the bytes then). The choice
// and its reason are recorded in the copy.started event. Both routes use the
// same plan, messages and receiver (transfer/copy_plan.h, transfer/chunk_files.h),
// so either resumes what the other left.
//
// io thread only (see stage_runner.h).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>

#include "jobs/copy/copy_context.h"
#include "jobs/copy/direct_copy.h"
#include "jobs/stage_runner.h"

namespace ferry {

class DirectCopy;
class RelayCopy;

/// Re-attaches (StageRunner::reattaches): a direct copy's push is a job on the source
/// host, followed again (find_push); a relay goes on from what the receiver has
/// journaled.
class CopyStage : public StageRunnerBase<Reattach::kYes>, public std::enable_shared_from_this<CopyStage> {
 public:
  CopyStage(StageEnv& env, CopySpec spec);
  ~CopyStage() override;
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;

  static constexpr int kProgressEveryMs = 500;
  static constexpr int kProbeTimeoutMs = 3000;

 private:
  void list_source();
  void decide_route();
  void ask_hosts();
  void say_hello(const std::string& host, std::function<void(std::string exe, std::string workdir)> then);
  void find_push();
  void probe_route();
  void choose(workflow::CopyRoute route, const std::string& reason);
  void report_progress();
  void finish(StageOutcome o);

  std::shared_ptr<CopyContext> c_;
  std::function<void(StageOutcome)> done_;
  boost::asio::steady_timer progress_timer_;
  workflow::CopyRoute route_ = workflow::CopyRoute::kAuto;  // kAuto until chosen
  std::string route_reason_;
  AgentPlaces places_;  // the agents' own paths (hello), for the direct route
  std::shared_ptr<RelayCopy> relay_;
  std::shared_ptr<DirectCopy> direct_;
  int64_t started_ms_ = 0;
};

}  // namespace ferry
