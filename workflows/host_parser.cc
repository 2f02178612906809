#include "workflows/host_parser.h"

#include "base/ssh_ciphers.h"

namespace ferry::workflow {
namespace {

const std::vector<std::string> kHostKeys = {"transport",   "address", "port",        "user",      "identity",
                                            "known_hosts", "trust",   "ssh_config",  "ciphers",   "workdir",
                                            "env",         "give_up", "description", "scheduler", "slurm",
                                            "shell",       "connect"};

}  // namespace

void parse_hosts(YamlReader& r, const YAML::Node& n, Workflow* wf) {
  if (n.IsNull()) return;
  if (!r.expect_map(n, "hosts")) return;
  for (const auto& [name, name_at, v] : r.entries_of(n, {}, "'hosts'")) {
    Host h = r.named_entry<Host>("host", name, name_at);
    std::string what = "host '" + name + "'";
    if (v.IsNull()) {  // `name:` alone is a local host with defaults
      wf->hosts.push_back(h);
      continue;
    }
    if (!r.expect_map(v, "hosts." + name)) continue;
    auto e = r.entries_of(v, kHostKeys, what);
    if (auto x = r.find(e, "transport")) {
      if (auto t = r.one_of(*x, "transport", transport_names())) h.transport = *parse_transport(*t);
    }
    r.read_scalar(e, "address", &h.address);
    if (auto x = r.find(e, "port")) {
      if (auto p = r.integer(*x, "port", 1, 65535)) h.port = static_cast<int>(*p);
    }
    r.read_scalar(e, "user", &h.user);
    r.read_scalar(e, "identity", &h.identity);
    r.read_scalar(e, "known_hosts", &h.known_hosts);
    r.read_scalar(e, "ssh_config", &h.ssh_config);
    if (auto x = r.find(e, "trust")) {
      if (auto t = r.one_of(*x, "trust", {"known-hosts", "first-use"})) h.trust_first_use = *t == "first-use";
    }
    if (auto x = r.find(e, "ciphers")) {
      if (auto s = r.scalar(*x, "ciphers")) {
        std::string problem = cipher_list_problem(*s);
        if (problem.empty()) h.ciphers = *s;
        else r.error(r.loc(*x), what + " ciphers: " + problem);
      }
    }
    r.read_text(e, "workdir", &h.workdir);
    r.read_shell(e, what, &h.shell);
    if (auto x = r.find(e, "connect")) {
      if (auto c = r.one_of(*x, "connect", {"start", "when-needed"})) h.connect_at_start = *c == "start";
    }
    if (auto x = r.find(e, "env")) r.parse_env(*x, "env", &h.env);
    if (auto x = r.find(e, "give_up")) {
      if (auto d = r.duration(*x, "give_up")) h.give_up_s = *d;
    }
    if (auto x = r.find(e, "scheduler")) {
      if (auto t = r.one_of(*x, "scheduler", {"none", "slurm"}))
        h.scheduler = *t == "slurm" ? Scheduler::kSlurm : Scheduler::kNone;
    }
    if (auto x = r.find(e, "slurm")) {
      r.parse_slurm(*x, r.key_at(e, "slurm"), what, &h.slurm);
      if (h.scheduler != Scheduler::kSlurm) {
        r.error(r.key_at(e, "slurm"), what + " has 'slurm' options but no 'scheduler: slurm'");
      }
    }
    if (h.transport == Transport::kSsh && h.address.empty()) {
      r.error(h.at, what + " uses transport ssh but has no 'address'");
    }
    if (h.transport == Transport::kLocal) {
      for (const char* k : {"address", "user", "identity", "known_hosts", "trust", "ssh_config", "ciphers"}) {
        if (!r.find(e, k)) continue;
        r.error(r.key_at(e, k), "'" + std::string(k) + "' applies to ssh hosts only; " + what + " is local");
      }
    }
    wf->hosts.push_back(h);
  }
}

}  // namespace ferry::workflow
