// StageSpec: one stage as an attempt runs it, resolved once from the workflow by
// the scheduler (templates expanded, the hosts' env merged, upstream outputs
// taken) and handed to make_stage_runner. Each kind has its own fields, so the
// type says which apply; the runners read them by name, never by a JSON key.
//
// The JSON form (stored_json) exists only at the store boundary: its hash is the
// attempt's inputs hash, which `ferry resume` compares to keep a success. Its
// keys and values are those earlier versions wrote, so runs recorded before
// still resume without running their stages again.
//
// Plain values; any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/eval/run/eval_spec.h"
#include "workflows/model.h"

namespace ferry {

struct CommandStageSpec {
  std::string command;  // templates expanded and shell-quoted
  std::string shell;    // workflows/shell_choice.h; "" = the default (bash -eo pipefail, else sh -e)
  std::string cwd;
  double timeout_s = 0;                       // 0 = none
  std::map<std::string, std::string> env;     // the host's, then the stage's, then FERRY_*
  std::vector<std::string> required_outputs;  // declared without a value: the job writes them
  /// On a `scheduler: slurm` host: the sbatch options the agent submits with
  /// ({partition, account, qos, mem, gres, cpus, time_min, options}); null = a detached job.
  nlohmann::json slurm;
};

struct CopyStageSpec {
  std::string from_host, from;  // from: as the source agent resolves it
  std::string to_host, to;
  std::string keep_local;  // as the workflow says it, relative to the workflow file; "" = none
  workflow::CopyRoute route = workflow::CopyRoute::kAuto;
  int streams = 4;
  // What the route choice needs: a direct copy is ssh from the source to the
  // destination's address, as the workflow names it.
  workflow::Transport from_transport = workflow::Transport::kLocal;
  workflow::Transport to_transport = workflow::Transport::kLocal;
  std::string to_address;
  int to_port = 22;
  std::string to_user;
  double to_give_up_s = 600;
};

/// An eval that follows a training stage (`watch:` in the workflow): each checkpoint
/// the trainer completes is copied to the eval's host and evaluated there.
struct WatchSpec {
  std::string stage;  // the training stage followed
  std::string pattern = "checkpoint-*";
  std::string marker;  // "" = weights present and files stable (checkpoint_scan.h)
  bool fail_on_error = false;  // a checkpoint's failed copy or eval fails the stage (else: watch.skipped)
  // from_host, from: the trainer's checkpoint folder; to_host: the eval's host, and
  // the route facts. A checkpoint's copy adds its name to from and goes to drafter/NAME.
  CopyStageSpec copy;
};

/// An eval stage: the engine's EvalSpec (jobs/eval/run/eval_spec.h; every field of
/// what to evaluate and how, listed once there) and where and how the stage runs it.
struct EvalStageSpec : eval::EvalSpec {
  // The paths have their templates expanded; in the coordinator relative to the
  // workflow file, on a host relative to its workdir (prompts may name a coordinator
  // file: "coordinator:PATH").
  // On a host only: the worker is a job there.
  std::map<std::string, std::string> env;
  double timeout_s = 0;
  nlohmann::json slurm;  // on a `scheduler: slurm` host: the worker's sbatch options; null = a detached job
  std::optional<WatchSpec> watch;
  /// The merge of a sharded eval (workflows/eval_shards.h): its shard stages, in prompt
  /// order (nothing is decoded). A shard's part is the spec's shard_index/shard_count.
  std::vector<std::string> shards;
};

struct StageSpec {
  std::string name;
  std::string host;  // a command's host; an eval's ("" = in the coordinator); "" for a copy
  std::variant<CommandStageSpec, CopyStageSpec, EvalStageSpec> spec;
  /// Outputs of every stage this one needs, directly or not: inputs too (a changed
  /// checkpoint path means a new eval).
  std::map<std::string, std::map<std::string, std::string>> upstream;
  /// The cap of the attempt's log (`log_max`); not an input: changing it reruns nothing.
  int64_t log_max = kDefaultLogMaxBytes;

  workflow::StageKind kind() const;
  /// The inputs as the store keeps and hashes them (keys unchanged since schema 1).
  nlohmann::json stored_json() const;
};

/// The sbatch options a Slurm host's agent gets for a stage: its `slurm:` over the
/// host's, and `--time` from slurm.time, else the stage's timeout (minutes, rounded up).
nlohmann::json slurm_submit_json(const workflow::SlurmOptions& options, double timeout_s);

/// The eval engine's spec of an eval stage as JSON: what travels through the plugin's
/// C ABI or to the worker on a host. Paths are left as `spec` has them.
nlohmann::json eval_engine_json(const EvalStageSpec& spec);

}  // namespace ferry
