#include "protocol/ops/job.h"

#include "protocol/ops/message_fields.h"

namespace ferry::protocol {
namespace {

// Both directions of each message (base/json_field_writer.h, base/json_fields.h).
constexpr auto job_ref_fields = [](auto& v, auto& x) {
  v("job", x.job, kRequired);
  v("attempt", x.attempt, kRequired);
  v("token", x.token, kRequired);
};

constexpr auto slurm_submit_fields = [](auto& v, auto& x) {
  constexpr bool reads = kReads<decltype(v)>;
  v.nonempty("partition", x.partition);
  v.nonempty("account", x.account);
  v.nonempty("qos", x.qos);
  v.nonempty("mem", x.mem);
  v.nonempty("gres", x.gres);
  if (reads || x.cpus > 0) v("cpus", x.cpus);
  if (reads || x.time_min > 0) v("time_min", x.time_min);
  if (reads || !x.options.empty()) v("options", x.options);
};

constexpr auto job_start_fields = [](auto& v, auto& x) {
  job_ref_fields(v, x.ref);
  v("command", x.command, kRequired);
  v.nonempty("shell", x.shell);
  v("env", x.env);
  v("cwd", x.cwd);
  v("timeout_s", x.timeout_s);
  v("log_max", x.log_max);
  v.object("slurm", x.slurm, slurm_submit_fields);
};

constexpr auto job_record_fields = [](auto& v, auto& x) {
  constexpr bool reads = kReads<decltype(v)>;
  v.named("state", x.state, kJobStateNames);
  v("pid", x.pid);
  v("exit_code", x.exit_code);
  v("signal", x.signal);
  v("timed_out", x.timed_out);
  v("cancelled", x.cancelled);
  v("started_ms", x.started_ms);
  v("ended_ms", x.ended_ms);
  v("log_size", x.log_size);
  v("outputs", x.outputs);
  // A detached job's containment, or a Slurm job's id and state: one or the other is sent.
  if (reads || !x.is_slurm()) {
    v("contained_by", x.contained_by);
    v("containment_note", x.containment_note);
  }
  if (reads || x.is_slurm()) {
    v("slurm_job", x.slurm_job);
    v("slurm_state", x.slurm_state);
    v("slurm_reason", x.slurm_reason);
  }
  v.nonempty("cause", x.cause);
  v.nonempty("cause_note", x.cause_note);
};

constexpr auto job_start_reply_fields = [](auto& v, auto& x) {
  job_record_fields(v, x.record);
  v("reattached", x.reattached);
  v("stopped_attempt", x.stopped_attempt);
};

constexpr auto job_cancel_fields = [](auto& v, auto& x) {
  job_ref_fields(v, x.ref);
  v("hard", x.hard);
};

constexpr auto log_read_fields = [](auto& v, auto& x) {
  v("job", x.job, kRequired);
  v("attempt", x.attempt, kRequired);
  v("offset", x.offset);
  v("max", x.max);
};

constexpr auto log_read_reply_fields = [](auto& v, auto& x) {
  v("offset", x.offset);
  v("size", x.size);
  if (kReads<decltype(v)> || x.dropped > 0) v("dropped", x.dropped);
};

}  // namespace

FERRY_REQUEST_JSON(JobRef, job_ref_fields)
FERRY_REPLY_JSON(SlurmSubmit, "the sbatch options", slurm_submit_fields)
FERRY_REQUEST_JSON(JobStartArgs, job_start_fields)
FERRY_REPLY_JSON(JobRecord, "the job record", job_record_fields)
FERRY_REPLY_JSON(JobStartReply, "the job.start reply", job_start_reply_fields)
FERRY_REQUEST_JSON(JobCancelArgs, job_cancel_fields)
FERRY_REQUEST_JSON(LogReadArgs, log_read_fields)
FERRY_REPLY_JSON(LogReadReply, "the log.read reply", log_read_reply_fields)

}  // namespace ferry::protocol
