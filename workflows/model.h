// The typed workflow model that the YAML parser produces (workflows/README.md is
// the user-facing schema). Plain values, copied freely; any thread.
//
// Every element remembers where it came from (Location), so errors found later,
// even at run time, can still say "file:line:col".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/capped_log.h"

namespace ferry::workflow {

struct Location {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based
};

/// A string from the file that may contain ${{ }} templates, with its place.
struct Text {
  std::string value;
  Location at;
  bool empty() const { return value.empty(); }
};

struct Param {
  std::string name;
  std::string default_value;
  Location at;
};

/// How a host's agent is reached (workflows/README.md, `transport`): the kind of its
/// link, each kind one alternative of HostLink below.
enum class Transport { kLocal, kSsh };
/// "local", "ssh": the workflow's word for a transport, also in `ferry hosts check`.
const char* transport_name(Transport transport);
std::optional<Transport> parse_transport(const std::string& name);
/// Every transport's word, in the table's order: the choices `transport:` takes.
std::vector<std::string> transport_names();

/// Who runs a host's command stages: its agent (none), or Slurm through the agent
/// on the host, its login node (workflows/README.md, "Slurm").
enum class Scheduler { kNone, kSlurm };

/// sbatch options: a Slurm host's defaults, a stage's overrides (slurm_options.h).
struct SlurmOptions {
  std::string partition, account, qos, mem, gres;
  int cpus = 0;        // --cpus-per-task; 0 = Slurm's default
  double time_s = 0;   // --time; 0 = the stage's timeout, else the partition's limit
  std::vector<std::string> extra;  // more sbatch flags, "--flag" or "--flag=value"
  Location at;         // of the 'slurm' key; unknown when absent
  bool given = false;
};

/// `transport: local`: the agent runs as a subprocess of the coordinator.
struct LocalLink {
  static constexpr Transport kTransport = Transport::kLocal;
};

/// `transport: ssh`: the agent runs over an exec channel of an SSH session.
struct SshLink {
  static constexpr Transport kTransport = Transport::kSsh;
  std::string address;  // name or IP; may be an ~/.ssh/config alias
  int port = 22;
  std::string user;
  std::string identity;     // private key file
  std::string known_hosts;  // "" = ~/.ssh/known_hosts
  bool trust_first_use = false;
  std::string ssh_config;  // "" = ~/.ssh/config; a path; "none" = no config
  std::string ciphers;     // "" = the ssh config's Ciphers, else AES-GCM first on AES hardware
};

/// A host's link: its transport and that transport's own settings, so a setting of
/// one transport cannot be set on a host of another.
using HostLink = std::variant<LocalLink, SshLink>;

/// A host: how it is reached (`link`), and what every transport shares. A Slurm
/// host is a host of either link with `scheduler: slurm`.
struct Host {
  std::string name;
  Location at;
  HostLink link;
  Text workdir;  // "" = the default for the transport
  std::map<std::string, Text> env;
  double give_up_s = 600;  // stop reconnecting after this long
  Scheduler scheduler = Scheduler::kNone;
  SlurmOptions slurm;  // defaults for the host's stages (scheduler slurm)
  std::string shell;   // its command stages' shell (shell_choice.h); "" = the workflow's
  /// `connect: start` (default): reached when the run starts, and a host that cannot
  /// be fails the run at once; `when-needed`: first reached by its first stage.
  bool connect_at_start = true;

  /// The kind of `link`, read off the variant, so no field can disagree with it.
  Transport transport() const {
    return std::visit([](const auto& l) { return l.kTransport; }, link);
  }
};

enum class StageKind { kCommand, kCopy, kEval };
const char* stage_kind_name(StageKind kind);

/// How a copy's bytes travel (workflows/README.md#copy-stages).
enum class CopyRoute { kAuto, kDirect, kRelay };
/// "auto", "direct", "relay": the workflow's word, also in events and progress.
const char* copy_route_name(CopyRoute route);
std::optional<CopyRoute> parse_copy_route(const std::string& name);

struct Output {
  std::string name;
  std::optional<Text> value;  // absent: the job writes it to $FERRY_OUTPUT
  Location at;
};

struct Endpoint {  // HOST:PATH in a copy stage
  std::string host;
  Text path;
};

struct EvalGate {
  std::optional<double> min_tau;
  std::optional<double> min_ratio_to_reference;
};

/// An eval stage that follows a training stage: it evaluates each checkpoint the
/// trainer completes in `from`, as it appears (workflows/README.md, "Watching checkpoints").
struct CheckpointWatch {
  std::string stage;  // the training stage followed; "" = no watch
  Location stage_at;
  Endpoint from;                          // HOST:FOLDER holding the checkpoint folders
  std::string pattern = "checkpoint-*";  // their names (fnmatch)
  std::string marker;                     // a file the trainer writes last; "" = the safetensors + stable rule
  bool fail_on_error = false;             // a checkpoint's failed copy or eval fails the stage
};

struct Stage {
  std::string name;
  Location at;
  StageKind kind = StageKind::kCommand;
  std::string host;  // command stages; eval stages ("" = in the coordinator)
  Location host_at;  // of the 'host' value; unknown when the key is absent
  std::vector<std::string> needs;
  std::vector<Location> needs_at;
  std::map<std::string, Text> env;
  std::vector<Output> outputs;
  double timeout_s = 0;  // 0 = none
  int64_t log_max_bytes = kDefaultLogMaxBytes;  // the attempt's log, on the host and mirrored
  int retries = 0;
  double retry_backoff_s = 1;  // doubles after each failed attempt
  std::vector<int> retry_on;   // empty = retry on any failure
  /// Slurm ends named in retry_on (TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, CANCELLED).
  std::vector<std::string> retry_on_causes;

  // command
  Text run;
  Text cwd;
  std::string shell;  // how `run` is run (shell_choice.h); "" = the host's, then the workflow's
  SlurmOptions slurm;  // on a scheduler: slurm host, over the host's defaults

  // copy
  Endpoint from, to;
  CopyRoute route = CopyRoute::kAuto;
  Location route_at;           // of the 'route' value; unknown when the key is absent
  Text keep_local;
  int streams = 4;

  // eval
  Text target, drafter, reference, prompts;
  /// `prompts:` as a map of named datasets {gsm8k: FILE, ...}, in the file's order;
  /// then `prompts` is empty (jobs/eval/run/eval_datasets.h).
  std::vector<std::pair<std::string, Text>> prompt_sets;
  Text tokenizer;                       // folder with tokenizer.json; empty = the target's
  std::string prompt_format = "chat";  // raw | chat | chat-no-think
  int max_new_tokens = 128;
  int block_size = 0;
  std::string device = "cpu";
  std::string dtype = "auto";  // auto: the target checkpoint's dtype
  int threads = 0;
  double temperature = 0;  // 0 = greedy; > 0: the target's tokens sampled (jobs/eval/run/token_sampler.h)
  uint64_t seed = 0;
  EvalGate gate;
  CheckpointWatch watch;
  /// A sharded eval (`hosts:`, eval_shards.h): the prompts are split over these hosts.
  /// After parsing, the stage is the merge of its shard stages, which come before it.
  std::vector<std::string> hosts;
  Location hosts_at;  // unknown when the key is absent
  int shard_index = 0;  // a shard stage: decodes part shard_index of shard_count
  int shard_count = 1;
  int shards_on_host = 1;           // a shard stage: how many of its eval's shards its host runs
  std::vector<std::string> shards;  // the merge stage: its shard stages, in prompt order
};

/// The most shards one eval's prompts are split into.
inline constexpr size_t kMaxEvalShards = 64;

struct Workflow {
  std::string path;    // as given on the command line
  std::string source;  // the file's text, kept so a run can be resumed as it was
  std::string name;
  Location name_at;
  std::vector<Param> params;
  std::vector<Host> hosts;
  std::vector<Stage> stages;
  std::string shell;  // every command stage's shell unless its host or stage says (shell_choice.h)

  /// The shell a command stage runs with: the stage's, its host's, the workflow's; "" = the default.
  std::string shell_of(const Stage& stage) const;
  const Host* find_host(const std::string& name) const;
  const Stage* find_stage(const std::string& name) const;
  const Param* find_param(const std::string& name) const;
};

}  // namespace ferry::workflow
