// ferry-agent: the small static binary that runs on every host (DESIGN §2, §4).
//   ferry-agent serve --workdir DIR   speak the frame protocol on stdin/stdout
//   ferry-agent version               print the agent and protocol versions
//   ferry-agent hash-self             print the XXH3-128 of this binary (bootstrap check)
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <cstring>
#include <string>

#include "agents/agent_server.h"
#include "base/file_hash.h"
#include "agents/file_util.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: ferry-agent serve --workdir DIR [--idle-exit SECONDS]\n"
               "       ferry-agent version\n"
               "       ferry-agent hash-self\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string cmd = argv[1];
  if (cmd == "version") {
    std::printf("ferry-agent %s protocol %u\n", ferry::kAgentVersion, ferry::protocol::kProtocolVersion);
    return 0;
  }
  if (cmd == "hash-self") {
    auto hex = ferry::xxh128_file_hex("/proc/self/exe");
    if (!hex.ok()) {
      std::fprintf(stderr, "ferry-agent: %s\n", hex.status().message().c_str());
      return 1;
    }
    std::printf("%s\n", hex->c_str());
    return 0;
  }
  if (cmd == "serve") {
    std::string workdir;
    double idle_exit = 120;
    for (int i = 2; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--workdir") && i + 1 < argc) workdir = argv[++i];
      else if (!std::strcmp(argv[i], "--idle-exit") && i + 1 < argc) idle_exit = std::atof(argv[++i]);
      else return usage();
    }
    if (workdir.empty()) return usage();
    if (workdir[0] != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof cwd)) workdir = ferry::join_path(cwd, workdir);
    }
    auto s = ferry::make_dirs(workdir);
    if (!s.ok()) {
      std::fprintf(stderr, "ferry-agent: %s\n", s.message().c_str());
      return 1;
    }
    ::signal(SIGPIPE, SIG_IGN);
    return ferry::AgentServer(workdir).serve(0, 1, idle_exit);
  }
  return usage();
}
