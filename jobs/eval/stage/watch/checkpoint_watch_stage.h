// CheckpointWatchStage: an eval stage with `watch:` — it follows a training stage and
// evaluates every checkpoint the trainer completes, as it appears: it lists the
// trainer's checkpoint folder (fs.scan: shallow, paged, links and specials skipped;
// agents/checkpoint_listing.h) every kWatchPollMs, takes the folders the completion
// rule says are done (checkpoint_scan.h), and for each in step order copies it to the
// eval's host (a CopyStage, relay or direct as a copy stage would) and evaluates it
// there (the remote eval worker). Each eval's report is recorded as an eval.report
// event with the checkpoint's name, step, content hash (the copy's manifest hash) and
// listing (a hash of its files, sizes and mtimes); a checkpoint whose content equals
// one already evaluated is recorded as watch.same_content and not evaluated again.
// A checkpoint is one version of a folder: the same name with other files (a
// `checkpoint-last` rewritten) is evaluated again, under job keys of its own.
// Checkpoints older than the followed stage's attempt (an earlier run's) are
// ignored (watch.ignored). A checkpoint whose copy or eval fails (rotated away,
// rewritten while copied) is recorded as watch.skipped with the cause and the watch
// goes on (a rewritten one comes back as a new version), unless `fail_on_error`.
// The stage ends once the followed stage has ended and every completed checkpoint is
// done. The target's plain baseline and the reference drafter are decoded by the
// first checkpoint's eval only: it stores them on the eval's host, and every later
// one (across a resume too) reuses them (kWatchBaselineStore). Each checkpoint's
// eval defers its gate ("judged on the last checkpoint"); the stage judges it on
// the last checkpoint evaluated in any attempt, from its stored report
// (last_checkpoint_gate.h), records the verdict as an eval.gate event, and its
// counts are the stage's over every attempt: a retry or a resume that evaluates
// nothing new ends as the attempt before it did. After `ferry resume` (same attempt,
// so the copy and the eval worker of the checkpoint in flight are re-attached), the
// versions recorded as evaluated, same or skipped are not taken again. The stage's
// `timeout` bounds the whole watch (the scheduler's timer). io thread only
// (stage_runner.h).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <set>

#include "jobs/eval/stage/watch/checkpoint_scan.h"
#include "jobs/stage_runner.h"
#include "jobs/stage_spec.h"

namespace ferry {

inline constexpr int kWatchPollMs = 500;
/// Listings after the followed stage ended that wait for a half-written checkpoint
/// to settle (the completion rule's polls over its span, and one more) before it is
/// reported incomplete and the stage ends. Counted in listings, not time: a long
/// eval in between takes none of them.
inline constexpr int kWatchFinalPolls = kStablePolls + static_cast<int>(kStableMs / kWatchPollMs) + 1;
/// A listing page's size (fs.scan max_entries): about 2 MiB of JSON.
inline constexpr int64_t kWatchPageEntries = 20000;
/// Allowance for the trainer host's clock against the coordinator's, measured at
/// each listing, when checkpoints are judged older than the followed attempt.
inline constexpr int64_t kWatchClockSlackMs = 2000;

/// Where on the eval's host (under its workdir) a watch's checkpoint evals keep the
/// baseline and reference runs they share, a folder per watch stage's job.
inline constexpr const char* kWatchBaselineStore = ".ferry/eval-baselines";

/// The part of a checkpoint's job keys and folder name on the eval host that names
/// it: the name itself when it is a short [A-Za-z0-9._-] name, else a hash of it
/// (agents/job_journal.cc takes no other job names).
std::string checkpoint_key(const std::string& name);

/// Re-attaches (StageRunner::reattaches): each checkpoint's copy and eval are jobs of
/// this attempt on the hosts, and what it has done is in its recorded events: a resumed
/// attempt goes on from there.
class CheckpointWatchStage : public StageRunnerBase<Reattach::kYes>,
                             public std::enable_shared_from_this<CheckpointWatchStage> {
 public:
  /// `eval`: the eval stage's resolved spec, its `watch` set; `host`: where the evals run;
  /// `log_max`: the cap of each checkpoint's eval job log there (the stage's).
  CheckpointWatchStage(StageEnv& env, std::string host, EvalStageSpec eval, int64_t log_max, AttemptId id);
  ~CheckpointWatchStage() override;
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;

 private:
  class CheckpointEnv;
  void poll();
  void list_page(const std::string& after);
  void on_page(Result<protocol::FsScanReply> page);
  void on_listing(const std::vector<protocol::ScannedFolder>& folders);
  void skip(const CheckpointFolder& c, const std::string& during, const std::string& cause);
  void work_or_wait();
  void copy_next();
  void evaluate(const CheckpointFolder& c, const std::string& content_hash);
  void wait_then_poll();
  void finish(StageOutcome o);
  StageOutcome final_outcome();

  StageEnv& env_;
  std::string host_;
  int64_t log_max_;
  EvalStageSpec eval_;
  WatchSpec watch_;
  AttemptId id_;
  std::function<void(StageOutcome)> done_;
  boost::asio::steady_timer timer_;
  CheckpointScan scan_;
  // Versions (name + listing hash) evaluated, same or skipped; names alone from
  // events written before versions were recorded.
  std::set<std::string> handled_, handled_names_;
  std::map<std::string, std::string> done_hashes_;  // content hash → the checkpoint evaluated with it
  std::set<std::string> ignored_;                   // folders older than the followed attempt, reported
  std::vector<protocol::ScannedFolder> pages_;      // the listing's folders so far
  int64_t host_ahead_ms_ = 0;                       // the trainer host's clock minus ours
  std::vector<CheckpointFolder> queue_;             // complete, not yet done, in step order
  std::shared_ptr<StageRunner> current_;
  std::unique_ptr<CheckpointEnv> current_env_;
  // Runners done with and their envs: a runner may still have a handler queued that
  // touches its env after it reported, so both live as long as the stage.
  std::vector<std::shared_ptr<StageRunner>> retired_runners_;
  std::vector<std::unique_ptr<CheckpointEnv>> retired_envs_;
  void begin(std::shared_ptr<StageRunner> runner, std::unique_ptr<CheckpointEnv> env);
  // The last checkpoint evaluated, over every attempt: its eval.report as stored (null: none).
  nlohmann::json last_report_;
  int polls_since_followed_ended_ = -1;  // -1: the followed stage is still going
  bool busy_ = false;                    // a copy or an eval is under way
  bool cancelled_ = false;
  bool finished_ = false;
  int evaluated_ = 0, same_content_ = 0, skipped_ = 0;  // over every attempt
  std::string last_skip_;
};

}  // namespace ferry
