// DirectCopy: the direct route of a copy stage (copy_stage.h). The source host's
// agent runs `ferry-agent push` (agents/push.h) as a detached job — through a
// CommandStage, so it is started, followed, re-attached after a drop or by
// `ferry resume`, and cancelled exactly like a command — and the push's progress
// lines (transfer/push_progress.h) become this stage's progress.
//
// io thread only (see stage_runner.h).
#pragma once

#include <memory>
#include <string>

#include "jobs/copy/copy_context.h"

namespace ferry {

class CommandStage;

/// Where the two agents live (their hello replies): the push runs the source's,
/// and its ssh starts the destination's.
struct AgentPlaces {
  std::string src_exe, src_workdir, dest_exe, dest_workdir;
};

class DirectCopy : public std::enable_shared_from_this<DirectCopy> {
 public:
  DirectCopy(std::shared_ptr<CopyContext> c, AgentPlaces places);
  ~DirectCopy();
  /// Starts the push, or follows the one this attempt started (`reattach`); ends
  /// the copy through c->finish when the push ends.
  void start(bool reattach);
  void cancel(bool hard);
  /// The push's own figures: it may have run before this coordinator did.
  double rate() const { return push_rate_; }
  double seconds() const { return push_seconds_; }

 private:
  class PushEnv;
  void on_push_line(const std::string& line);
  void on_push_done(StageOutcome o);

  std::shared_ptr<CopyContext> c_;
  AgentPlaces places_;
  std::unique_ptr<PushEnv> push_env_;
  std::shared_ptr<CommandStage> push_;
  std::string push_error_;  // the push's own `ferry-push error:` line
  double push_rate_ = 0;    // bytes/s, as the push measures it
  double push_seconds_ = 0;
};

}  // namespace ferry
