// The job ops' messages (protocol/ops/job.h): each read back as written, the wire
// keys as before, and a field the message does not have, one of the wrong type or
// a required one missing refused with an error that names it.
#include "protocol/ops/job.h"

#include <gtest/gtest.h>

namespace ferry::protocol {
namespace {

JobStartArgs some_start() {
  JobStartArgs a;
  a.ref = {"run.u1.build", 2, "tok"};
  a.command = "make -j4";
  a.env = {{"CC", "gcc"}, {"EMPTY", ""}};
  a.cwd = "src";
  a.timeout_s = 90.5;
  a.log_max = 1 << 20;
  return a;
}

nlohmann::json start_header() {
  nlohmann::json j = some_start().to_json();
  j["op"] = "job.start";  // a request's header names its op too
  return j;
}

std::string error_of(const nlohmann::json& j) {
  auto r = JobStartArgs::from_json(j);
  return r.ok() ? "(read without an error)" : r.status().message();
}

TEST(JobOpsTest, StartArgsReadBackAsWritten) {
  auto r = JobStartArgs::from_json(start_header());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->ref.job, "run.u1.build");
  EXPECT_EQ(r->ref.attempt, 2);
  EXPECT_EQ(r->ref.token, "tok");
  EXPECT_EQ(r->command, "make -j4");
  EXPECT_EQ(r->env, some_start().env);
  EXPECT_EQ(r->cwd, "src");
  EXPECT_EQ(r->timeout_s, 90.5);
  EXPECT_EQ(r->log_max, std::optional<int64_t>(1 << 20));
  EXPECT_FALSE(r->slurm.has_value());
  EXPECT_EQ(r->shell, "");
}

TEST(JobOpsTest, StartArgsKeepTheWireKeys) {
  nlohmann::json j = some_start().to_json();
  EXPECT_EQ(j, nlohmann::json::parse(R"({"job":"run.u1.build","attempt":2,"token":"tok","command":"make -j4",
      "env":{"CC":"gcc","EMPTY":""},"cwd":"src","timeout_s":90.5,"log_max":1048576})"));
  JobStartArgs slurm = some_start();
  slurm.shell = "bash";
  slurm.slurm.emplace();
  slurm.slurm->partition = "gpu";
  slurm.slurm->time_min = 30;
  j = slurm.to_json();
  EXPECT_EQ(j["shell"], "bash");
  EXPECT_EQ(j["slurm"], nlohmann::json::parse(R"({"partition":"gpu","time_min":30})"));
  auto back = JobStartArgs::from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->slurm.has_value());
  EXPECT_EQ(back->slurm->partition, "gpu");
  EXPECT_EQ(back->slurm->time_min, 30);
  EXPECT_EQ(back->shell, "bash");
}

TEST(JobOpsTest, AnUnknownFieldIsRefusedByName) {
  nlohmann::json j = start_header();
  j["timout_s"] = 5;  // misspelt
  EXPECT_EQ(error_of(j), "the job.start request's timout_s is not a known field");
}

TEST(JobOpsTest, AMistypedFieldIsRefusedByName) {
  nlohmann::json j = start_header();
  j["timeout_s"] = "soon";
  EXPECT_EQ(error_of(j), "the job.start request's timeout_s is a string, not a number");
  j = start_header();
  j["attempt"] = 1.5;
  EXPECT_EQ(error_of(j), "the job.start request's attempt is a number, not an integer");
  j = start_header();
  j["env"]["CC"] = 1;
  EXPECT_EQ(error_of(j), "the job.start request's env.CC is a number, not a string");
  j = start_header();
  j["slurm"] = "gpu";
  EXPECT_EQ(error_of(j), "the job.start request's slurm is a string, not an object");
  j = start_header();
  j["slurm"] = {{"partition", "gpu"}, {"time", 30}};  // an option sbatch is not given
  EXPECT_EQ(error_of(j), "the job.start request's slurm.time is not a known field");
}

TEST(JobOpsTest, ARequiredFieldMissingIsNamed) {
  for (const char* key : {"job", "attempt", "token", "command"}) {
    nlohmann::json j = start_header();
    j.erase(key);
    EXPECT_EQ(error_of(j), std::string("the job.start request's ") + key + " is missing");
  }
}

TEST(JobOpsTest, ARecordSendsContainmentOrSlurmNotBoth) {
  JobRecord detached;
  detached.state = JobState::kExited;
  detached.exit_code = 3;
  detached.outputs = {{"model", "/ckpt/7"}};
  detached.contained_by = "process group";
  detached.containment_note = "no delegated cgroup";
  detached.cgroup = "/sys/fs/cgroup/x";  // the agent's own
  nlohmann::json j = detached.to_json();
  EXPECT_EQ(j["state"], "exited");
  EXPECT_EQ(j["contained_by"], "process group");
  EXPECT_FALSE(j.contains("slurm_job"));
  EXPECT_FALSE(j.contains("cgroup"));
  EXPECT_FALSE(j.contains("cause"));
  auto back = JobRecord::from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->state, JobState::kExited);
  EXPECT_EQ(back->exit_code, 3);
  EXPECT_EQ(back->outputs, detached.outputs);
  EXPECT_EQ(back->containment_note, "no delegated cgroup");

  JobRecord slurm;
  slurm.state = JobState::kRunning;
  slurm.slurm_job = "42";
  slurm.slurm_state = "PENDING";
  slurm.slurm_reason = "Resources";
  j = slurm.to_json();
  EXPECT_FALSE(j.contains("contained_by"));
  EXPECT_EQ(j["slurm_reason"], "Resources");
  back = JobRecord::from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->is_slurm());
  EXPECT_EQ(back->slurm_state, "PENDING");
}

TEST(JobOpsTest, AnUnknownJobStateIsRefusedWithTheStates) {
  nlohmann::json j = JobRecord().to_json();
  j["state"] = "finished";
  auto r = JobRecord::from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the job record's state is 'finished', not one of running, exited, lost");
}

TEST(JobOpsTest, AStartReplyCarriesTheRecordAndTheFence) {
  JobStartReply reply;
  reply.record.state = JobState::kRunning;
  reply.record.pid = 77;
  reply.stopped_attempt = 1;
  nlohmann::json j = reply.to_json();
  EXPECT_EQ(j["reattached"], false);
  EXPECT_EQ(j["stopped_attempt"], 1);
  auto back = JobStartReply::from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->record.pid, 77);
  EXPECT_EQ(back->stopped_attempt, std::optional<int>(1));
  EXPECT_FALSE(JobStartReply().to_json().contains("stopped_attempt"));
}

TEST(JobOpsTest, LogReadDefaultsAndDroppedBytes) {
  auto args = LogReadArgs::from_json({{"op", "log.read"}, {"job", "j"}, {"attempt", 1}});
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(args->offset, 0);
  EXPECT_EQ(args->max, kMaxLogRead);
  EXPECT_FALSE(LogReadArgs::from_json({{"job", "j"}, {"attempt", 1}, {"offset", "0"}}).ok());
  LogReadReply reply{10, 20, 0};
  EXPECT_FALSE(reply.to_json().contains("dropped"));
  reply.dropped = 4;
  auto back = LogReadReply::from_json(reply.to_json());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->dropped, 4);
}

}  // namespace
}  // namespace ferry::protocol
