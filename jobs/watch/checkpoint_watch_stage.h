// CheckpointWatchStage: an eval stage with `watch:` — it follows a training stage and
// evaluates every checkpoint the trainer completes, as it appears: it lists the
// trainer's checkpoint folder (fs.list) every kWatchPollMs, takes the folders the
// completion rule says are done (checkpoint_scan.h), and for each in step order
// copies it to the eval's host (a CopyStage, relay or direct as a copy stage would)
// and evaluates it there (the remote eval worker). Each eval's report is recorded
// as an eval.report event with the checkpoint's name, step and content hash (the
// copy's manifest hash); a checkpoint whose content equals one already evaluated is
// recorded as watch.same_content and not evaluated again. The stage ends once the
// followed stage has ended and every completed checkpoint is done; the gate applies
// to the last checkpoint. After `ferry resume` (same attempt, so the copy and the
// eval worker of the checkpoint in flight are re-attached), the checkpoints whose
// eval.report is recorded are not evaluated again. io thread only (stage_runner.h).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <set>

#include "jobs/stage_runner.h"
#include "jobs/stage_spec.h"
#include "jobs/watch/checkpoint_scan.h"

namespace ferry {

inline constexpr int kWatchPollMs = 500;
/// Listings after the followed stage ended that wait for a half-written checkpoint
/// to settle before it is reported incomplete and the stage ends.
inline constexpr int kWatchFinalPolls = 4;

class CheckpointWatchStage : public StageRunner, public std::enable_shared_from_this<CheckpointWatchStage> {
 public:
  /// `eval`: the eval stage's resolved spec, its `watch` set; `host`: where the evals run.
  CheckpointWatchStage(StageEnv& env, std::string host, EvalStageSpec eval, AttemptId id);
  ~CheckpointWatchStage() override;
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;

 private:
  class CheckpointEnv;
  void poll();
  void on_listing(Result<protocol::Frame> r);
  void work_or_wait();
  void copy_next();
  void evaluate(const CheckpointFolder& c, const std::string& content_hash);
  void wait_then_poll();
  void finish(StageOutcome o);
  StageOutcome final_outcome();

  StageEnv& env_;
  std::string host_;
  EvalStageSpec eval_;
  WatchSpec watch_;
  AttemptId id_;
  std::function<void(StageOutcome)> done_;
  boost::asio::steady_timer timer_;
  CheckpointScan scan_;
  std::set<std::string> done_names_;
  std::map<std::string, std::string> done_hashes_;  // content hash → the checkpoint evaluated with it
  std::vector<CheckpointFolder> queue_;              // complete, not yet done, in step order
  std::shared_ptr<StageRunner> current_;
  std::unique_ptr<CheckpointEnv> current_env_;
  // Runners done with and their envs: a runner may still have a handler queued that
  // touches its env after it reported, so both live as long as the stage.
  std::vector<std::shared_ptr<StageRunner>> retired_runners_;
  std::vector<std::unique_ptr<CheckpointEnv>> retired_envs_;
  void begin(std::shared_ptr<StageRunner> runner, std::unique_ptr<CheckpointEnv> env);
  StageOutcome last_eval_;
  bool have_eval_ = false;
  int polls_since_followed_ended_ = -1;  // -1: the followed stage is still going
  bool busy_ = false;  // a copy or an eval is under way
  bool cancelled_ = false;
  bool finished_ = false;
  int evaluated_ = 0, same_content_ = 0;
};

}  // namespace ferry
