// Scheduler::StageSlot: what the scheduler holds for one stage of the run: its
// state, newest attempt and token, the runner of the attempt in flight, its timers
// and its outputs. Internal to the scheduler (orchestrator/scheduler.cc); io thread only.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <boost/asio/steady_timer.hpp>

#include "jobs/stage_runner.h"
#include "jobs/states.h"
#include "orchestrator/attempt_env.h"
#include "orchestrator/scheduler.h"

namespace ferry {

struct Scheduler::StageSlot {
  const workflow::Stage* spec = nullptr;
  StageState state = StageState::kPending;
  int attempt = 0;            // newest attempt number recorded
  int attempts_this_run = 0;  // for the retry budget
  std::string token;
  std::string recorded_hash;  // inputs of the last recorded attempt
  bool confirmed = false;     // succeeded in this run, or kept after its inputs were checked
  bool reattach = false;      // resume: the newest attempt is still out there
  std::shared_ptr<StageRunner> runner;
  std::unique_ptr<boost::asio::steady_timer> retry_timer;
  std::unique_ptr<boost::asio::steady_timer> timeout_timer;  // kinds whose job does not enforce `timeout`
  bool timed_out = false;     // the timeout cancelled the running attempt
  int64_t started_ms = 0;     // of the newest attempt (a re-attached one keeps its start)
  std::unique_ptr<AttemptEnv> env;
  std::map<std::string, std::string> outputs;
};

}  // namespace ferry
