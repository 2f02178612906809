#include "orchestrator/hosts_check.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <iomanip>
#include <sstream>

#include "orchestrator/host_connection.h"
#include "orchestrator/transport_factory.h"
#include "orchestrator/workflow_paths.h"
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

// Host workdirs as a run would see them, params at their defaults.
std::string workdir_of(const workflow::Workflow& wf, const workflow::Host& h, const std::string& home) {
  auto w = workflow::expand_template(
      h.workdir.value,
      [&](const workflow::Reference& r) -> Result<std::string> {
        const auto* p = wf.find_param(r.name);
        if (p) return p->default_value;
        return std::string("check");
      },
      false);
  return resolve_host_workdir(h, w.ok() ? *w : h.workdir.value, wf.path, home);
}

}  // namespace

nlohmann::json check_hosts(const workflow::Workflow& wf, const std::string& ferry_home) {
  boost::asio::io_context io;
  nlohmann::json report = {{"hosts", nlohmann::json::array()}, {"reach", nlohmann::json::array()}};
  std::vector<std::shared_ptr<HostConnection>> conns;
  std::vector<nlohmann::json> hosts(wf.hosts.size());
  int pending = 0;
  auto done_one = [&] {
    if (--pending == 0) io.stop();
  };
  for (size_t i = 0; i < wf.hosts.size(); ++i) {
    const auto& h = wf.hosts[i];
    hosts[i] = {{"name", h.name},
                {"transport", h.transport == workflow::Transport::kSsh ? "ssh" : "local"},
                {"address", h.address},
                {"connected", false}};
    ConnectionOptions opts;
    opts.give_up_s = 0;  // a check reports the first failure, it does not wait for the host
    auto conn = std::make_shared<HostConnection>(io, h.name, make_transport_factory(h, workdir_of(wf, h, ferry_home)), opts);
    conn->start([&hosts, i](bool connected, const std::string& why) {
      if (connected) hosts[i]["connected"] = true;
      else if (!why.empty()) hosts[i]["error"] = why;
    });
    conns.push_back(conn);
    ++pending;
    conn->call("host.info", nlohmann::json::object(), [&, i](Result<protocol::Frame> r) {
      if (r.ok()) {
        hosts[i]["connected"] = true;
        hosts[i]["info"] = r->header;
        hosts[i]["agent"] = conns[i]->hello();
      } else if (!hosts[i].contains("error")) {
        hosts[i]["error"] = r.status().message();
      }
      done_one();
    });
  }
  // Host-to-host: each host's agent tries every other SSH host's address:port.
  for (size_t i = 0; i < wf.hosts.size(); ++i) {
    for (size_t j = 0; j < wf.hosts.size(); ++j) {
      const auto& to = wf.hosts[j];
      if (i == j || to.transport != workflow::Transport::kSsh) continue;
      ++pending;
      nlohmann::json args = {{"address", to.address}, {"port", to.port}, {"timeout_ms", kProbeTimeoutMs}};
      std::string from_name = wf.hosts[i].name;
      conns[i]->call("net.probe", args, [&, from_name, to_name = to.name](Result<protocol::Frame> r) {
        nlohmann::json row = {{"from", from_name}, {"to", to_name}};
        if (r.ok()) {
          row["reachable"] = r->header.value("reachable", false);
          if (r->header.contains("error")) row["error"] = r->header["error"];
        } else {
          row["reachable"] = nullptr;  // unknown: the source host itself is not reachable
          row["error"] = r.status().message();
        }
        report["reach"].push_back(row);
        done_one();
      });
    }
  }
  boost::asio::steady_timer deadline(io, std::chrono::seconds(kCheckDeadlineS));
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (!ec) io.stop();
  });
  if (pending > 0) io.run();
  for (auto& c : conns) c->request_stop();
  for (auto& c : conns) c->stop();
  for (auto& h : hosts) {
    // The coordinator reaches a host exactly when it got an agent there; the
    // same live TCP session carries the host's traffic back.
    h["reaches_coordinator"] = h["connected"];
    report["hosts"].push_back(h);
  }
  return report;
}

std::string render_hosts_check(const nlohmann::json& report) {
  std::ostringstream out;
  for (const auto& h : report["hosts"]) {
    out << h["name"].get<std::string>() << " (" << h["transport"].get<std::string>()
        << (h["address"].get<std::string>().empty() ? "" : " " + h["address"].get<std::string>()) << "): ";
    if (!h.value("connected", false)) {
      out << "UNREACHABLE — " << h.value("error", std::string("no answer")) << "\n";
      continue;
    }
    const auto& info = h["info"];
    out << "ok, agent " << h["agent"].value("version", std::string("?")) << " on " << info.value("hostname", std::string("?"))
        << ", " << info.value("cores", 0) << " cores, " << gib(info.value("mem_available_bytes", 0.0)) << " of "
        << gib(info.value("mem_total_bytes", 0.0)) << " memory free, " << gib(info.value("disk_free_bytes", 0.0))
        << " free in " << info.value("workdir", std::string()) << ", ";
    if (info["gpus"].empty()) out << "no GPU";
    for (const auto& g : info["gpus"]) out << g.value("name", std::string()) << " (" << g.value("memory", std::string()) << ") ";
    out << "\n";
  }
  if (!report["reach"].empty()) {
    out << "reachability (from → to):\n";
    for (const auto& r : report["reach"]) {
      std::string verdict = r["reachable"].is_null() ? "unknown" : r["reachable"].get<bool>() ? "reaches" : "cannot reach";
      out << "  " << r["from"].get<std::string>() << " " << verdict << " " << r["to"].get<std::string>();
      if (r.contains("error") && !r["reachable"].is_boolean()) out << " (" << r["error"].get<std::string>() << ")";
      else if (r.contains("error")) out << " (" << r["error"].get<std::string>() << ")";
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace ferry
