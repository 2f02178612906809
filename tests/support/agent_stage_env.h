// AgentStageEnv: a StageEnv whose hosts are in-process agents (in_process_agent.h), each
// over a folder of the test's — the agent's real request handling and the frame codec, without
// processes, pipes or SSH (as ninja's tests run builds through a FakeCommandRunner, and leveldb's through
// an in-memory Env). Every call (any lane) is handled at once and its reply posted on
// the env's io_context; `fault` may answer a call in the agent's place (a refused
// write, a dropped link) to drive a runner through its error paths. Events, the log
// and progress are kept in memory. Unit tests of stage logic; io thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "jobs/stage_runner.h"
#include "tests/support/in_process_agent.h"

namespace ferry::testing {

class AgentStageEnv : public StageEnv {
 public:
  /// Answers a call in place of the host's agent (a status or a frame), or lets it through.
  using Fault = std::function<std::optional<Result<protocol::Frame>>(const std::string& host, const std::string& op,
                                                                     const nlohmann::json& args)>;

  /// A host named `name` whose agent's workdir is `workdir`.
  void add_host(const std::string& name, const std::string& workdir) {
    agents_[name] = std::make_unique<InProcessAgent>(workdir);
  }

  boost::asio::io_context& io() override { return io_; }
  void call_agent(const std::string& host, const std::string& op, nlohmann::json args, ReplyFn fn) override {
    call_agent_lane(host, 0, op, std::move(args), "", std::move(fn));
  }
  void call_agent_lane(const std::string& host, int, const std::string& op, nlohmann::json args, std::string body,
                       ReplyFn fn) override {
    ++calls[op];
    Result<protocol::Frame> reply = handle(host, op, std::move(args), std::move(body));
    boost::asio::post(io_, [fn = std::move(fn), reply = std::move(reply)]() mutable { fn(std::move(reply)); });
  }
  std::string local_path(const std::string& path) override { return path; }
  void record_event(const std::string& type, nlohmann::json detail) override {
    events.emplace_back(type, std::move(detail));
  }
  Status append_log(const std::string& bytes) override {
    log += bytes;
    return Status();
  }
  Status skip_log(int64_t) override { return Status(); }
  int64_t log_size() override { return static_cast<int64_t>(log.size()); }
  void set_disconnected(int64_t since_ms) override { disconnected_ms.push_back(since_ms); }
  void note(const std::string& line) override { notes.push_back(line); }
  void set_progress(nlohmann::json p) override { progress = std::move(p); }

  /// The details of the events of `type`, in order.
  std::vector<nlohmann::json> events_of(const std::string& type) const {
    std::vector<nlohmann::json> out;
    for (const auto& [t, d] : events) {
      if (t == type) out.push_back(d);
    }
    return out;
  }

  Fault fault;
  std::map<std::string, int> calls;  // by op
  std::vector<std::pair<std::string, nlohmann::json>> events;
  std::vector<std::string> notes;
  std::vector<int64_t> disconnected_ms;
  nlohmann::json progress;
  std::string log;

 private:
  Result<protocol::Frame> handle(const std::string& host, const std::string& op, nlohmann::json args,
                                 std::string body) {
    if (fault) {
      if (auto answer = fault(host, op, args)) return std::move(*answer);
    }
    auto it = agents_.find(host);
    if (it == agents_.end()) return unavailable("no host '" + host + "' in this test");
    std::string request =
        protocol::encode_frame(protocol::make_request(++next_id_, op, std::move(args), std::move(body)));
    auto replies = it->second->take(request.data(), request.size());
    if (!replies.ok()) return replies.status();
    auto reply = decode_reply(*replies);
    if (!reply.ok()) return reply.status();
    if (reply->type == protocol::FrameType::kError) return protocol::status_from_error_frame(*reply);
    return reply;
  }

  // The reply as the coordinator reads it: decoded, so a list the agent sent in the
  // body is back in the header, and a frame the codec refuses fails.
  static Result<protocol::Frame> decode_reply(const std::string& bytes) {
    protocol::FrameDecoder decoder;
    decoder.feed(bytes.data(), bytes.size());
    auto decoded = decoder.next();
    if (!decoded.ok()) return decoded.status();
    if (!decoded->has_value()) return internal_error("a frame that does not decode whole");
    return std::move(**decoded);
  }

  boost::asio::io_context io_;
  std::map<std::string, std::unique_ptr<InProcessAgent>> agents_;
  uint32_t next_id_ = 0;
};

}  // namespace ferry::testing
