// CopyContext: what the parts of a copy stage share — the spec, the files and
// the byte counters — between the route choice (copy_stage.h) and the engine it
// picks: the relay (relay_copy.h) or the direct push's driver (direct_copy.h).
// The stage owns it; each engine holds it too, so a late reply after the end
// finds `finished` set and does nothing.
//
// io thread only (see stage_runner.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jobs/stage_runner.h"
#include "jobs/stage_spec.h"
#include "transfer/copy_plan.h"
#include "workflows/model.h"

namespace ferry {

/// What a copy runner does: a resolved copy (a copy stage's, or a checkpoint's of a
/// watching eval) with keep_local made a coordinator path ("" = none), and the attempt
/// it is, whose job the direct route's push is on the source host.
struct CopySpec {
  CopyStageSpec copy;
  AttemptId id;
  int64_t chunk_size = 2 << 20;
  /// A copy stage's relay says what it did in the stage's log (`ferry logs RUN COPY`).
  /// Not a watch's copy: that log is the eval's. Not the direct route: the push writes it.
  bool relay_writes_log = false;
};

/// `c`'s runner spec for the attempt `id`: keep_local resolved through `env`.
CopySpec copy_spec(const CopyStageSpec& c, StageEnv& env, const AttemptId& id);

/// One file of the copy: the sender's view (copy_plan.h) plus keep_local's.
struct CopyEntry : CopyFile {
  std::string local;                          // keep_local's full path ("" = none)
  std::map<int64_t, std::string> local_have;  // verified in keep_local
  bool local_complete = false;                // keep_local already holds exactly these bytes
  std::string file_hash;  // set once committed, when the per-chunk state above is let go (the manifest needs only this)
};

struct CopyBytes {
  int64_t total = 0;
  int64_t done = 0;  // reached every destination
  int64_t sent = 0;  // written to the destination host, counting re-sends
  int64_t resent = 0;
  int64_t skipped = 0;  // already there (resume, identical files)
};

class CopyContext : public std::enable_shared_from_this<CopyContext> {
 public:
  static constexpr int kRetryMs = 1000;

  CopyContext(StageEnv& env, CopySpec spec);

  StageEnv& env;
  const CopySpec spec;
  const int lanes;  // relay lanes, or the push's streams
  bool is_dir = false;
  std::vector<CopyEntry> files;
  CopyBytes bytes;
  bool finished = false;  // the outcome is out: replies that come later are dropped
  bool cancelled = false;
  bool lanes_warm = false;  // the relay's lanes were asked to come up (RelayCopy::warm_lanes)
  /// The stage's end (set by the stage); fail() ends it failed.
  std::function<void(StageOutcome)> finish;

  /// The copy's files relative to its root (a folder copy's record of what it brings).
  std::vector<std::string> file_rels() const;
  void fail(const std::string& why);
  /// A line of the relay's own log (CopySpec::relay_writes_log), else nothing.
  void log_relay(const std::string& line);
  /// `fn` again in kRetryMs, unless the copy finished meanwhile.
  void retry_later(std::function<void()> fn);
};

}  // namespace ferry
