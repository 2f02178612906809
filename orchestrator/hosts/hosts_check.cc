#include "orchestrator/hosts/hosts_check.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <iomanip>
#include <set>
#include <sstream>

#include "base/peer_json.h"
#include "base/terminal_text.h"
#include "orchestrator/hosts/eval_capability.h"
#include "orchestrator/hosts/host_connection.h"
#include "orchestrator/hosts/transport_factory.h"
#include "orchestrator/workflow_paths.h"
#include "protocol/ops/host.h"
#include "transfer/copy_plan.h"
#include "transfer/host_listing.h"
#include "workflows/slurm_options.h"
#include "workflows/template.h"

namespace ferry {
namespace {

constexpr int kProbeTimeoutMs = 3000;
constexpr int kCheckDeadlineS = 60;

std::string gib(double bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << bytes / (1024.0 * 1024 * 1024) << " GiB";
  return s.str();
}

// A host setting's template as a run would see it, params at their defaults.
std::string expand_host_setting(const workflow::Workflow& wf, const workflow::Text& t) {
  auto w = workflow::expand_template(
      t.value,
      [&](const workflow::Reference& r) -> Result<std::string> {
        const auto* p = wf.find_param(r.name);
        if (p) return p->default_value;
        return std::string("check");
      },
      false);
  return w.ok() ? *w : t.value;
}

std::string workdir_of(const workflow::Workflow& wf, const workflow::Host& h, const std::string& home) {
  return resolve_host_workdir(h, expand_host_setting(wf, h.workdir), wf.path, home);
}

// The target models of the eval stages on `host` whose paths need nothing of a run.
std::vector<std::string> eval_targets_on(const workflow::Workflow& wf, const std::string& host) {
  std::vector<std::string> out;
  for (const auto& s : wf.stages) {
    if (s.kind != workflow::StageKind::kEval || s.host != host) continue;
    auto refs = workflow::parse_references(s.target.value);
    bool params_only = refs.ok();
    for (const auto& r : refs.ok() ? *refs : std::vector<workflow::Reference>{}) {
      params_only = params_only && r.kind == workflow::Reference::Kind::kParam;
    }
    if (params_only) out.push_back(expand_host_setting(wf, s.target));
  }
  return out;
}

// Host strings reach the terminal shown, not obeyed (base/terminal_text.h).
std::string shown(const nlohmann::json& j, const char* key, const std::string& fallback = "") {
  return escape_controls(str_field(j, key, fallback));
}

std::string render_eval_row(const nlohmann::json& h) {
  const auto& e = obj_field(h, "eval");
  std::ostringstream out;
  if (!bool_field(e, "can_run")) {
    out << "evals: NO — " << shown(e, "why", "unknown");
    if (e.contains("fix")) out << "; fix: " << shown(e, "fix");
    return out.str();
  }
  out << "evals: yes — libtorch " << shown(e, "libtorch", "?") << ", CPU";
  for (const auto& f : arr_field(e, "cpu_flags")) {
    if (f.is_string()) out << " " << escape_controls(f.get<std::string>());
  }
  out << (bool_field(e, "bf16") ? " (BF16 in hardware)" : " (no BF16 in hardware: bfloat16 evals run slowly)") << ", "
      << int_field(e, "cores") << " cores, " << int_field(e, "cuda_devices") << " CUDA device(s)";
  double mem = num_field(obj_field(h, "info"), "mem_total_bytes");
  for (const auto& m : arr_field(h, "eval_models")) {
    double bytes = num_field(m, "bytes");
    std::ostringstream size;
    size << std::fixed << std::setprecision(1) << bytes / (1024.0 * 1024) << " MiB";
    out << "; model " << shown(m, "path") << " " << (bytes < (1 << 30) ? size.str() : gib(bytes)) << " of " << gib(mem)
        << " memory" << (bytes > mem ? " — DOES NOT FIT" : "");
  }
  return out.str();
}

std::string render_slurm_row(const nlohmann::json& s) {
  std::ostringstream out;
  if (!bool_field(s, "ok")) return "slurm: NO — " + shown(s, "error", "no answer");
  out << "slurm: yes — partitions";
  for (const auto& p : arr_field(s, "partitions")) {
    out << " " << shown(p, "name") << (bool_field(p, "default") ? "*" : "") << " (" << shown(p, "available") << ", "
        << int_field(p, "nodes") << " node(s), limit " << shown(p, "time_limit");
    std::string gres = shown(p, "gres");
    if (!gres.empty() && gres != "(null)") out << ", " << gres;
    out << ")";
  }
  for (const auto& u : arr_field(s, "unknown_partitions")) {
    out << "; UNKNOWN PARTITION '" << shown(u, "partition") << "' (stage '" << shown(u, "stage") << "')";
  }
  return out.str();
}

}  // namespace

nlohmann::json slurm_check_row(const nlohmann::json& reply,
                               const std::vector<std::pair<std::string, std::string>>& wanted) {
  // Read typed: a reply of another shape is an error row naming the field, not a throw that ends the whole
  // check (review-4 P9).
  auto info = protocol::SlurmInfoReply::from_json(reply);
  if (!info.ok()) return {{"ok", false}, {"error", info.status().message()}};
  nlohmann::json parts = nlohmann::json::array();
  std::set<std::string> known;
  for (const auto& p : info->partitions) {
    if (p.name.empty()) continue;
    known.insert(p.name);
    parts.push_back({{"name", p.name},
                     {"default", p.is_default},
                     {"available", p.available},
                     {"time_limit", p.time_limit},
                     {"nodes", p.nodes},
                     {"gres", p.gres}});
  }
  nlohmann::json unknown = nlohmann::json::array();
  for (const auto& [stage, partition] : wanted) {
    if (!known.count(partition)) unknown.push_back({{"stage", stage}, {"partition", partition}});
  }
  return {{"ok", true}, {"partitions", parts}, {"unknown_partitions", unknown}};
}

namespace {

// The partitions the stages on host `i` ask for, as {stage, partition}.
std::vector<std::pair<std::string, std::string>> wanted_partitions(const workflow::Workflow& wf, size_t i) {
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const auto& st : wf.stages) {
    if (st.host != wf.hosts[i].name) continue;
    std::string part = workflow::merge_slurm(wf.hosts[i].slurm, st.slurm).partition;
    if (!part.empty()) wanted.push_back({st.name, part});
  }
  return wanted;
}

// One `ferry hosts check`: a connection to every host, each check a call on it.
// Every call counts as pending until it answers; the io loop stops at zero or at
// the deadline. All of it runs on the calling thread's io loop.
class HostsCheck {
 public:
  HostsCheck(const workflow::Workflow& wf, const std::string& ferry_home, const TransportFactoryMaker& transports)
      : wf_(wf),
        ferry_home_(ferry_home),
        transports_(transports),
        hosts_(wf.hosts.size()) {}

  nlohmann::json run() {
    for (size_t i = 0; i < wf_.hosts.size(); ++i) connect(i);
    for (size_t i = 0; i < wf_.hosts.size(); ++i) {
      for (size_t j = 0; j < wf_.hosts.size(); ++j) probe_reach(i, j);
    }
    wait_for_answers();
    for (auto& h : hosts_) {
      // The coordinator reaches a host exactly when it got an agent there; the
      // same live TCP session carries the host's traffic back.
      h["reaches_coordinator"] = h["connected"];
      report_["hosts"].push_back(h);
    }
    return report_;
  }

 private:
  void done_one() {
    if (--pending_ == 0) io_.stop();
  }

  // The host's link as a run makes it (key, auth, agent: the transport's error
  // says which failed), then its resources; the rest of the checks need an agent.
  void connect(size_t i) {
    const auto& h = wf_.hosts[i];
    const auto* ssh = std::get_if<workflow::SshLink>(&h.link);
    hosts_[i] = {{"name", h.name},
                 {"transport", workflow::transport_name(h.transport())},
                 {"address", ssh ? ssh->address : ""},
                 {"connected", false}};
    ConnectionOptions opts;
    opts.give_up_s = 0;  // a check reports the first failure, it does not wait for the host
    const std::string workdir = workdir_of(wf_, h, ferry_home_);
    auto conn = std::make_shared<HostConnection>(
        io_, h.name, transports_ ? transports_(h, workdir) : make_transport_factory(h, workdir), opts);
    conn->start([this, i](bool connected, const std::string& why) {
      if (connected) hosts_[i]["connected"] = true;
      else if (!why.empty()) hosts_[i]["error"] = why;
    });
    conns_.push_back(conn);
    ++pending_;
    conn->call("host.info", nlohmann::json::object(), [this, i](Result<protocol::Frame> r) {
      auto info = protocol::reply_of<protocol::HostInfoReply>(r);
      if (r.ok()) {
        hosts_[i]["connected"] = true;
        hosts_[i]["agent"] = conns_[i]->hello();
      }
      if (info.ok()) {
        hosts_[i]["info"] = info->to_json();
        check_evals(i);
        size_eval_models(i);
        if (wf_.hosts[i].scheduler == workflow::Scheduler::kSlurm) check_slurm(i);
      } else if (r.ok() || !hosts_[i].contains("error")) {
        hosts_[i]["error"] = info.status().message();
      }
      done_one();
    });
  }

  // Whether the host can run evals: the eval worker's own check, there, under the host's env.
  void check_evals(size_t i) {
    const auto& h = wf_.hosts[i];
    std::map<std::string, std::string> env;
    for (const auto& [k, v] : h.env) env[k] = expand_host_setting(wf_, v);
    auto check = std::make_shared<EvalCapabilityCheck>(io_, conns_[i], h.name, env);
    eval_checks_.push_back(check);
    ++pending_;
    check->start([this, i](nlohmann::json result) {
      hosts_[i]["eval"] = std::move(result);
      done_one();
    });
  }

  // The size of the models the host's eval stages name, when they are there already.
  void size_eval_models(size_t i) {
    const auto& h = wf_.hosts[i];
    for (const auto& target : eval_targets_on(wf_, h.name)) {
      ++pending_;
      ListCall call = [conn = conns_[i]](nlohmann::json args, ReplyFn fn) {
        conn->call("fs.list", std::move(args), std::move(fn));
      };
      list_host_path(call, target, h.name + ":" + target, [this, i, target](Result<protocol::FsListReply> r) {
        if (r.ok()) hosts_[i]["eval_models"].push_back({{"path", target}, {"bytes", listed_bytes(*r)}});
        done_one();
      });
    }
  }

  // A Slurm host: sinfo reachable from its agent, its partitions, and the ones the stages name.
  void check_slurm(size_t i) {
    ++pending_;
    conns_[i]->call("slurm.info", nlohmann::json::object(), [this, i](Result<protocol::Frame> r) {
      nlohmann::json s = {{"ok", false}, {"error", r.ok() ? "" : r.status().message()}};
      if (r.ok()) s = slurm_check_row(r->header, wanted_partitions(wf_, i));
      hosts_[i]["slurm"] = s;
      done_one();
    });
  }

  // Host to host: host i's agent tries host j's address:port, when j is an SSH host.
  void probe_reach(size_t i, size_t j) {
    const auto& to = wf_.hosts[j];
    const auto* ssh = std::get_if<workflow::SshLink>(&to.link);
    if (i == j || ssh == nullptr) return;
    ++pending_;
    const protocol::NetProbeArgs args{ssh->address, ssh->port, kProbeTimeoutMs};
    std::string from_name = wf_.hosts[i].name;
    conns_[i]->call(protocol::NetProbeArgs::kOp, args.to_json(), [this, from_name, to_name = to.name](Result<protocol::Frame> r) {
      nlohmann::json row = {{"from", from_name}, {"to", to_name}};
      auto probe = protocol::reply_of<protocol::NetProbeReply>(r);
      if (probe.ok()) {
        row["reachable"] = probe->reachable;
        if (!probe->error.empty()) row["error"] = probe->error;
      } else {
        row["reachable"] = nullptr;  // unknown: the source host itself is not reachable, or its answer is not
        row["error"] = probe.status().message();
      }
      report_["reach"].push_back(row);
      done_one();
    });
  }

  void wait_for_answers() {
    boost::asio::steady_timer deadline(io_, std::chrono::seconds(kCheckDeadlineS));
    deadline.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) io_.stop();
    });
    if (pending_ > 0) io_.run();
    for (auto& c : conns_) c->request_stop();
    for (auto& c : conns_) c->stop();
  }

  const workflow::Workflow& wf_;
  const std::string& ferry_home_;
  const TransportFactoryMaker& transports_;
  boost::asio::io_context io_;
  nlohmann::json report_ = {{"hosts", nlohmann::json::array()}, {"reach", nlohmann::json::array()}};
  std::vector<std::shared_ptr<HostConnection>> conns_;
  std::vector<nlohmann::json> hosts_;  // one row per host, in the workflow's order
  std::vector<std::shared_ptr<EvalCapabilityCheck>> eval_checks_;
  int pending_ = 0;  // calls not yet answered
};

}  // namespace

nlohmann::json check_hosts(const workflow::Workflow& wf, const std::string& ferry_home,
                           const TransportFactoryMaker& transports) {
  return HostsCheck(wf, ferry_home, transports).run();
}

std::string render_hosts_check(const nlohmann::json& report) {
  std::ostringstream out;
  for (const auto& h : arr_field(report, "hosts")) {
    const std::string address = shown(h, "address");
    out << shown(h, "name") << " (" << shown(h, "transport") << (address.empty() ? "" : " " + address) << "): ";
    if (!bool_field(h, "connected")) {
      out << "UNREACHABLE — " << shown(h, "error", "no answer") << "\n";
      continue;
    }
    const auto& info = obj_field(h, "info");
    if (info.empty() && !str_field(h, "error").empty()) {  // an agent whose host.info could not be read
      out << "connected, agent " << shown(obj_field(h, "agent"), "version", "?") << ", but " << shown(h, "error")
          << "\n";
      continue;
    }
    out << "ok, agent " << shown(obj_field(h, "agent"), "version", "?") << " on " << shown(info, "hostname", "?")
        << ", " << int_field(info, "cores") << " cores, " << gib(num_field(info, "mem_available_bytes")) << " of "
        << gib(num_field(info, "mem_total_bytes")) << " memory free, " << gib(num_field(info, "disk_free_bytes"))
        << " free in " << shown(info, "workdir") << ", ";
    const auto& gpus = arr_field(info, "gpus");
    if (gpus.empty()) out << "no GPU";
    for (const auto& g : gpus) out << shown(g, "name") << " (" << shown(g, "memory") << ") ";
    out << "\n";
    if (h.contains("eval")) out << "  " << render_eval_row(h) << "\n";
    if (h.contains("slurm")) out << "  " << render_slurm_row(h["slurm"]) << "\n";
  }
  const auto& reach = arr_field(report, "reach");
  if (!reach.empty()) {
    out << "reachability (from → to):\n";
    for (const auto& r : reach) {
      const auto& reachable = any_field(r, "reachable");
      std::string verdict = !reachable.is_boolean() ? "unknown" : reachable.get<bool>() ? "reaches" : "cannot reach";
      out << "  " << shown(r, "from") << " " << verdict << " " << shown(r, "to");
      if (!str_field(r, "error").empty()) out << " (" << shown(r, "error") << ")";
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace ferry
