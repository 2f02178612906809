// lying-agent: a faulty or hostile source host for the copy tests. Stands in for
// ferry-agent (FERRY_AGENT_BIN): for the workdir in LYING_AGENT_WORKDIR it runs the
// real agent (LYING_AGENT_REAL) behind itself and adds an entry named
// LYING_AGENT_PATH (0 bytes, when set) at the front of every fs.list reply, and
// swallows every request whose op is LYING_AGENT_HOLD_OP (when set): it is never
// answered, while the agent's heartbeats keep the link alive (an operation that
// never ends), and runs the shell command LYING_AGENT_ON_READ (when set) once, as
// the first fs.read passes (a source that changes during the copy), or the first
// request of the op LYING_AGENT_ON_OP when that is set (a destination agent: the
// first recv.write of a direct push). With LYING_AGENT_EMPTY_READS set, every
// fs.read reply comes back with an empty body and the empty body's hash (a reader
// that never advances). For any other workdir it simply becomes the real agent.
// Everything else passes untouched.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/file_hash.h"
#include "protocol/frame.h"

namespace {

// Ids of fs.read requests not answered yet (LYING_AGENT_EMPTY_READS): the request
// thread adds them, the reply loop takes them.
std::mutex reads_mu;
std::set<uint32_t> reads;

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string env_or_die(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    std::fprintf(stderr, "lying-agent: %s is not set\n", name);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string real = env_or_die("LYING_AGENT_REAL");
  std::vector<char*> args(argv, argv + argc);
  args[0] = const_cast<char*>(real.c_str());
  args.push_back(nullptr);
  std::string workdir;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--workdir") workdir = argv[i + 1];
  }
  if (workdir != env_or_die("LYING_AGENT_WORKDIR")) {
    ::execv(real.c_str(), args.data());
    std::perror("lying-agent: exec");
    return 127;
  }
  const std::string lie = env_or_empty("LYING_AGENT_PATH");
  const std::string hold_op = env_or_empty("LYING_AGENT_HOLD_OP");
  const std::string on_read = env_or_empty("LYING_AGENT_ON_READ");
  const std::string on_op = env_or_empty("LYING_AGENT_ON_OP").empty() ? "fs.read" : env_or_empty("LYING_AGENT_ON_OP");
  const bool empty_reads = !env_or_empty("LYING_AGENT_EMPTY_READS").empty();
  int to_child[2], from_child[2];
  if (::pipe(to_child) != 0 || ::pipe(from_child) != 0) return 1;
  pid_t child = ::fork();
  if (child == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    ::close(to_child[1]);
    ::close(from_child[0]);
    ::execv(real.c_str(), args.data());
    _exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  // Requests go to the real agent as they are, but for the held op.
  std::thread forward([in = to_child[1], hold_op, on_read, on_op, empty_reads] {
    char buf[1 << 16];
    ferry::protocol::FrameDecoder requests;
    for (;;) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n <= 0) break;
      if (hold_op.empty() && on_read.empty() && !empty_reads) {
        if (!write_all(in, std::string(buf, static_cast<size_t>(n)))) break;
        continue;
      }
      requests.feed(buf, static_cast<size_t>(n));
      for (;;) {
        auto frame = requests.next();
        if (!frame.ok() || !frame->has_value()) break;
        std::string op = (**frame).header.value("op", "");
        if (!hold_op.empty() && op == hold_op) continue;
        if (empty_reads && op == "fs.read") {
          std::lock_guard<std::mutex> lock(reads_mu);
          reads.insert((**frame).request_id);
        }
        static bool ran = false;
        if (!on_read.empty() && op == on_op && !ran) {
          ran = true;
          if (std::system(on_read.c_str()) != 0) std::fprintf(stderr, "lying-agent: LYING_AGENT_ON_READ failed\n");
        }
        if (!write_all(in, ferry::protocol::encode_frame(**frame))) break;
      }
    }
    ::close(in);
  });
  forward.detach();
  // Replies come back frame by frame, listings with the lie in front.
  ferry::protocol::FrameDecoder decoder;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(from_child[0], buf, sizeof buf);
    if (n <= 0) break;
    decoder.feed(buf, static_cast<size_t>(n));
    for (;;) {
      auto frame = decoder.next();
      if (!frame.ok() || !frame->has_value()) break;
      ferry::protocol::Frame f = std::move(**frame);
      if (empty_reads && f.type == ferry::protocol::FrameType::kReply) {
        std::lock_guard<std::mutex> lock(reads_mu);
        if (reads.erase(f.request_id) > 0) {
          f.body.clear();
          f.header["hash"] = ferry::xxh128_hex(f.body.data(), 0);
        }
      }
      if (!lie.empty() && f.type == ferry::protocol::FrameType::kReply && f.header.contains("files") &&
          f.header["files"].is_array()) {
        nlohmann::json entry = {{"path", lie}, {"size", 0}, {"mode", 0644}};
        f.header["files"].insert(f.header["files"].begin(), entry);
      }
      if (!write_all(1, ferry::protocol::encode_frame(f))) return 1;
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return 0;
}
