#include "orchestrator/hosts/local_transport.h"

#include <unistd.h>

#include <cstdlib>

#include "base/file_util.h"
#include "base/private_dir.h"

namespace ferry {
namespace {

constexpr int kExitGraceMs = 1000;
// A local agent always reads; a full pipe for this long means it is stuck.
constexpr int kWriteTimeoutMs = 60000;

}  // namespace

std::string agent_binary_path() {
  const char* env = std::getenv("FERRY_AGENT_BIN");
  if (env && *env) return env;
  return companion_path("ferry-agent");
}

LocalTransport::LocalTransport(std::string agent_path, std::string workdir)
    : agent_path_(std::move(agent_path)), workdir_(std::move(workdir)) {}

LocalTransport::~LocalTransport() { close(); }

Status LocalTransport::open() {
  close();
  if (::access(agent_path_.c_str(), X_OK) != 0) {
    return not_found("agent binary " + agent_path_ + " is missing or not executable (set FERRY_AGENT_BIN)");
  }
  FERRY_RETURN_IF_ERROR(make_dirs(workdir_));
  // The agent refuses a workdir others can write and exits; said here, it is a
  // lasting error of the host, not an agent to restart until give_up.
  FERRY_RETURN_IF_ERROR(check_agent_dirs(workdir_));
  ChildProcess::Options options;
  // Keep the agent out of the coordinator's process group: a Ctrl-C in the
  // terminal is the coordinator's to handle, not the agent's.
  options.own_process_group = true;
  // Jobs on a local host find ferry's own programs (the demo's trainers) here:
  // /usr/lib/ferry installed, the build's bin/ from a build.
  options.env.push_back(std::string(kLibDirVar) + "=" + dirname_of(companion_path("ferry-agent")));
  auto child = ChildProcess::spawn({agent_path_, "serve", "--workdir", workdir_}, options);
  if (!child.ok()) return child.status();
  agent_ = std::move(child).value();
  return Status();
}

Result<size_t> LocalTransport::read_some(char* buf, size_t n, int timeout_ms) {
  if (!agent_) return unavailable("local agent is not running");
  auto got = agent_->read_some(buf, n, timeout_ms);
  if (!got.ok() && got.status().code() == StatusCode::kUnavailable) return unavailable("local agent exited");
  return got;
}

Status LocalTransport::write_all(const char* data, size_t n) {
  if (!agent_) return unavailable("local agent is not running");
  return agent_->write_all(data, n, kWriteTimeoutMs);
}

void LocalTransport::close() {
  // The agent exits on EOF; it gets a moment, then it is made sure of.
  if (agent_) agent_->finish(kExitGraceMs);
  agent_.reset();
}

Result<std::unique_ptr<AgentTransport>> LocalTransport::open_lane() {
  auto lane = std::make_unique<LocalTransport>(agent_path_, workdir_);
  FERRY_RETURN_IF_ERROR(lane->open());
  return std::unique_ptr<AgentTransport>(std::move(lane));
}

int LocalTransport::poll_fd() const { return agent_ ? agent_->stdout_fd() : -1; }

std::string LocalTransport::describe() const { return "local agent in " + workdir_; }

}  // namespace ferry
