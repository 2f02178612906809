// ferry-agent: the small static binary that runs on every host (docs/DESIGN.md §2, §4).
//   ferry-agent serve --workdir DIR [--lanes-socket PATH]   speak the frame protocol on stdin/stdout
//                                     (and to data lanes on PATH, lane_listener.h)
//   ferry-agent version               print the agent and protocol versions
//   ferry-agent hash-self             print the XXH3-128 of this binary (bootstrap check)
//   ferry-agent push [SPEC.json]      send a copy straight to another host over this
//                                     host's ssh (agents/push.h); the spec comes from the
//                                     file or $FERRY_PUSH_SPEC; run as a detached job
//   ferry-agent cap-log --max BYTES LOG -- COMMAND...   run COMMAND with its output
//                                     kept in LOG within BYTES (a Slurm job's, capped_run.h)
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "agents/agent_server.h"
#include "agents/capped_run.h"
#include "agents/lane_listener.h"
#include "agents/push.h"
#include "base/chunk_memory.h"
#include "base/file_hash.h"
#include "base/file_util.h"
#include "base/private_dir.h"
#include "transfer/push_progress.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: ferry-agent serve --workdir DIR [--idle-exit SECONDS] [--lanes-socket PATH]\n"
               "       ferry-agent version\n"
               "       ferry-agent hash-self\n"
               "       ferry-agent push [SPEC.json]\n"
               "       ferry-agent cap-log --max BYTES LOG -- COMMAND...\n");
  return 2;
}

// A push runs as attempt N of a detached job; once the coordinator has started
// a newer attempt of the same job (.ferry/jobs/JOB/current), this one must stop
// rather than race it. The attempt folder is where $FERRY_OUTPUT lives.
std::string superseded_by(const std::string& output_path) {
  if (output_path.empty()) return "";
  std::string attempt_dir = ferry::dirname_of(output_path);
  std::string job_dir = ferry::dirname_of(attempt_dir);
  int mine = std::atoi(attempt_dir.substr(attempt_dir.rfind('/') + 1).c_str());
  auto current = ferry::read_file(job_dir + "/current");
  if (!current.ok() || mine <= 0) return "";
  int newest = std::atoi(current->c_str());
  if (newest <= mine) return "";
  return "attempt " + std::to_string(newest) + " of this copy took over";
}

int push_main(int argc, char** argv) {
  std::string text;
  if (argc > 2) {
    auto file = ferry::read_file(argv[2]);
    if (!file.ok()) {
      std::fprintf(stdout, "%s%s\n", ferry::kPushErrorPrefix, file.status().message().c_str());
      return 2;
    }
    text = *file;
  } else if (const char* env = std::getenv("FERRY_PUSH_SPEC")) {
    text = env;
  } else {
    return usage();
  }
  auto json = nlohmann::json::parse(text, nullptr, false);
  auto spec = ferry::PushSpec::from_json(json);
  if (!spec.ok()) {
    std::fprintf(stdout, "%s%s\n", ferry::kPushErrorPrefix, spec.status().message().c_str());
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  const char* out_env = std::getenv("FERRY_OUTPUT");
  std::string outputs = out_env ? out_env : "";
  auto result = ferry::run_push(*spec, stdout, [outputs] { return superseded_by(outputs); });
  if (!result.ok()) {
    std::fprintf(stdout, "%s%s\n", ferry::kPushErrorPrefix, result.status().message().c_str());
    std::fflush(stdout);
    return 1;
  }
  if (!outputs.empty()) {
    std::string lines = "path=" + spec->to + "\nmanifest_hash=" + result->manifest_hash +
                        "\nbytes=" + std::to_string(result->bytes_total) + "\n";
    auto s = ferry::write_file_atomic(outputs, lines);
    if (!s.ok()) {
      std::fprintf(stdout, "%s%s\n", ferry::kPushErrorPrefix, s.message().c_str());
      return 1;
    }
  }
  std::fprintf(stdout, "ferry-push: done, manifest %s\n", result->manifest_hash.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string cmd = argv[1];
  if (cmd == "version") {
    std::printf("ferry-agent %s protocol %u\n", ferry::kAgentVersion, ferry::protocol::kProtocolVersion);
    return 0;
  }
  if (cmd == "hash-self") return ferry::print_self_hash("ferry-agent");
  if (cmd == "push") return push_main(argc, argv);
  if (cmd == "cap-log") return ferry::cap_log_main(argc - 1, argv + 1);
  if (cmd == "serve") {
    std::string workdir;
    std::string lanes_socket;
    double idle_exit = 120;
    for (int i = 2; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--workdir") && i + 1 < argc) workdir = argv[++i];
      else if (!std::strcmp(argv[i], "--lanes-socket") && i + 1 < argc) lanes_socket = argv[++i];
      else if (!std::strcmp(argv[i], "--idle-exit") && i + 1 < argc) idle_exit = std::atof(argv[++i]);
      else return usage();
    }
    if (workdir.empty()) return usage();
    if (workdir[0] != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof cwd)) workdir = ferry::join_path(cwd, workdir);
    }
    auto s = ferry::make_dirs(workdir);
    // Binaries, the lanes socket and job journals live under it: refuse a folder
    // others could write (review F15), whoever started us.
    if (s.ok()) s = ferry::check_agent_dirs(workdir);
    if (!s.ok()) {
      std::fprintf(stderr, "ferry-agent: %s\n", s.message().c_str());
      return 1;
    }
    ::signal(SIGPIPE, SIG_IGN);
    ferry::keep_chunk_buffers_warm();
    ferry::LaneListener lanes;
    if (!lanes_socket.empty()) {
      // Without it the coordinator's lanes start agents by exec, as before: slower, not wrong.
      auto st = lanes.listen(lanes_socket);
      if (!st.ok()) std::fprintf(stderr, "ferry-agent: no lanes socket: %s\n", st.message().c_str());
    }
    return ferry::AgentServer(workdir).serve(0, 1, idle_exit, lanes.fd() >= 0 ? &lanes : nullptr);
  }
  return usage();
}
