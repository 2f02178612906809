#include "workflows/host_parser.h"

#include <algorithm>
#include <cassert>

#include "base/ssh_ciphers.h"

namespace ferry::workflow {
namespace {

using Entries = YamlReader::Entries;

// Keys every host takes, whatever its transport.
const std::vector<std::string> kCommonKeys = {"transport", "workdir", "env",   "give_up", "description",
                                              "scheduler", "slurm",   "shell", "connect"};

bool contains(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

HostLink read_local_link(YamlReader&, const Entries&, const Host&, const std::string&) { return LocalLink{}; }

HostLink read_ssh_link(YamlReader& r, const Entries& e, const Host& h, const std::string& what) {
  SshLink ssh;
  r.read_scalar(e, "address", &ssh.address);
  if (ssh.address.empty()) r.error(h.at, what + " uses transport ssh but has no 'address'");
  if (auto x = r.find(e, "port")) {
    if (auto p = r.integer(*x, "port", 1, 65535)) ssh.port = static_cast<int>(*p);
  }
  r.read_scalar(e, "user", &ssh.user);
  r.read_scalar(e, "identity", &ssh.identity);
  r.read_scalar(e, "known_hosts", &ssh.known_hosts);
  r.read_scalar(e, "ssh_config", &ssh.ssh_config);
  if (auto x = r.find(e, "trust")) {
    if (auto t = r.one_of(*x, "trust", {"known-hosts", "first-use"})) ssh.trust_first_use = *t == "first-use";
  }
  if (auto x = r.find(e, "ciphers")) {
    if (auto s = r.scalar(*x, "ciphers")) {
      std::string problem = cipher_list_problem(*s);
      if (problem.empty()) ssh.ciphers = *s;
      else r.error(r.loc(*x), what + " ciphers: " + problem);
    }
  }
  return ssh;
}

// A transport's own keys and the reader that makes its link of them: a key is read
// by its link's reader only, and refused on a host of another transport.
struct LinkReader {
  Transport transport;
  std::vector<std::string> keys;
  HostLink (*read)(YamlReader& r, const Entries& e, const Host& h, const std::string& what);
};

const LinkReader kLinkReaders[] = {
    {Transport::kLocal, {}, read_local_link},
    {Transport::kSsh,
     {"address", "port", "user", "identity", "known_hosts", "trust", "ssh_config", "ciphers"},
     read_ssh_link},
};

const LinkReader& link_reader_of(Transport transport) {
  for (const LinkReader& l : kLinkReaders) {
    if (l.transport == transport) return l;
  }
  assert(false && "a Transport without a row in kLinkReaders");
  return kLinkReaders[0];
}

// The keys a host may have: the common ones and every transport's own.
const std::vector<std::string>& host_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> all = kCommonKeys;
    for (const LinkReader& l : kLinkReaders) {
      for (const std::string& k : l.keys) {
        if (!contains(all, k)) all.push_back(k);
      }
    }
    return all;
  }();
  return keys;
}

// A key of another transport's link is an error at the key, naming the transports it
// belongs to and the host's own.
void refuse_keys_of_other_links(YamlReader& r, const Entries& e, const LinkReader& own, const std::string& what) {
  for (const YamlReader::Entry& entry : e) {
    if (contains(kCommonKeys, entry.key) || contains(own.keys, entry.key)) continue;
    std::string owners;
    for (const LinkReader& l : kLinkReaders) {
      if (contains(l.keys, entry.key))
        owners += (owners.empty() ? "" : " and ") + std::string(transport_name(l.transport));
    }
    r.error(entry.at, "'" + entry.key + "' applies to " + owners + " hosts only; " + what + " is " +
                          transport_name(own.transport));
  }
}

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
    auto e = r.entries_of(v, host_keys(), what);
    Transport transport = Transport::kLocal;
    if (auto x = r.find(e, "transport")) {
      if (auto t = r.one_of(*x, "transport", transport_names())) transport = *parse_transport(*t);
    }
    const LinkReader& link = link_reader_of(transport);
    h.link = link.read(r, e, h, what);
    refuse_keys_of_other_links(r, e, link, what);
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
    wf->hosts.push_back(h);
  }
}

}  // namespace ferry::workflow
