// InProcessAgent: one host's `ferry-agent serve` inside the test's process: a real
// AgentServer over a folder of the test's, fed the bytes the coordinator wrote and
// answering with the bytes the agent would write, through the real frame codec. Each
// request is handled at once, on the caller's thread; jobs it starts are real detached
// jobs, journalled in the folder. What AgentStageEnv (a StageEnv) and InProcessTransport
// (an AgentTransport) serve their hosts with. One thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "agents/agent_server.h"
#include "protocol/frame.h"

namespace ferry::testing {

class InProcessAgent {
 public:
  /// Whether a request reaches the agent; false: the link breaks before it does.
  using Gate = std::function<bool(const protocol::Frame& request)>;

  explicit InProcessAgent(std::string workdir) : server_(std::move(workdir)) {}

  /// Takes bytes the coordinator wrote; returns the encoded replies to the requests they
  /// complete. A frame the codec refuses, or one `gate` holds back, fails: the link is gone
  /// (the real agent hangs up), and the next bytes are read as a new link's.
  Result<std::string> take(const char* data, size_t n, const Gate& gate = nullptr) {
    decoder_->feed(data, n);
    std::string replies;
    for (;;) {
      auto next = decoder_->next();
      if (!next.ok()) return hang_up(next.status());
      if (!next->has_value()) return replies;
      const protocol::Frame& request = **next;
      if (gate && !gate(request)) {
        return hang_up(unavailable("the test broke the link before '" + request.header.value("op", "") + "'"));
      }
      replies += protocol::encode_frame(server_.handle(request));
    }
  }

 private:
  Status hang_up(Status why) {
    decoder_ = std::make_unique<protocol::FrameDecoder>();
    return why;
  }

  AgentServer server_;
  std::unique_ptr<protocol::FrameDecoder> decoder_ = std::make_unique<protocol::FrameDecoder>();
};

}  // namespace ferry::testing
