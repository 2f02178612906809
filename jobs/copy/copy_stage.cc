#include "jobs/copy/copy_stage.h"

#include <algorithm>
#include <chrono>

#include "base/byte_size.h"
#include "base/clock.h"
#include "base/duration_text.h"
#include "jobs/agent_call.h"
#include "jobs/copy/direct_copy.h"
#include "jobs/copy/relay_copy.h"
#include "protocol/ops/host.h"
#include "protocol/ops/job.h"
#include "transfer/host_listing.h"

namespace ferry {

using workflow::copy_route_name;
using workflow::CopyRoute;
using workflow::Transport;
using workflow::transport_name;

namespace {

// The direct route's first condition: ssh from the source to the destination.
bool both_ssh(const CopyStageSpec& copy) {
  return copy.from_transport == Transport::kSsh && copy.to_transport == Transport::kSsh;
}

}  // namespace

CopyStage::CopyStage(StageEnv& env, CopySpec spec)
    : c_(std::make_shared<CopyContext>(env, std::move(spec))),
      progress_timer_(env.io()) {}

CopyStage::~CopyStage() = default;

void CopyStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  started_ms_ = now_ms();
  std::weak_ptr<CopyStage> weak = shared_from_this();
  c_->finish = [weak](StageOutcome o) {
    if (auto self = weak.lock()) self->finish(std::move(o));
  };
  // A copy that will surely relay brings its lanes up while listing; one that
  // may go direct waits for the route, so a direct copy opens no lane at all.
  const CopyStageSpec& copy = c_->spec.copy;
  bool may_go_direct = copy.route != CopyRoute::kRelay && copy.keep_local.empty() && both_ssh(copy);
  if (!may_go_direct) RelayCopy::warm_lanes(*c_);
  // Either way the destination's main link is needed (hello, or the relay's
  // recv.begin): log in there now, beside the source's, not after it.
  if (may_go_direct)
    c_->env.call_agent(c_->spec.copy.to_host, "ping", nlohmann::json::object(), [](Result<protocol::Frame>) {});
  list_source();
}

void CopyStage::list_source() {
  auto self = shared_from_this();
  const std::string& host = c_->spec.copy.from_host;
  ListCall call = [self, host](nlohmann::json args, ReplyFn fn) {
    self->c_->env.call_agent(host, protocol::FsListArgs::kOp, std::move(args), std::move(fn));
  };
  list_host_path(call, c_->spec.copy.from, host + ":" + c_->spec.copy.from, [self](Result<protocol::FsListReply> r) {
    if (self->c_->finished) return;
    if (!r.ok()) {
      if (transient_link_failure(r.status())) return self->c_->retry_later([self] { self->list_source(); });
      return self->c_->fail(r.status().message());  // it names the listing (host_listing.h)
    }
    const CopySpec& spec = self->c_->spec;
    const CopyStageSpec& copy = spec.copy;
    auto& files = self->c_->files;
    files.reserve(r->files.size());
    CopyListing plan;
    const std::string owner = copy_owner(spec.id.job, spec.id.attempt, spec.id.token);
    Status planned =
        plan_copy_each(std::move(r).value(), copy.from, copy.to, spec.chunk_size, owner, &plan, [&](CopyFile&& f) {
          CopyEntry file;
          static_cast<CopyFile&>(file) = std::move(f);
          if (!copy.keep_local.empty()) file.local = copy_dest_for(copy.keep_local, copy.from, file.rel, plan.is_dir);
          files.push_back(std::move(file));
        });
    if (!planned.ok()) return self->c_->fail("source host " + copy.from_host + ": " + planned.message());
    self->c_->is_dir = plan.is_dir;
    self->c_->bytes.total = plan.bytes_total;
    self->decide_route();
  });
}

void CopyStage::decide_route() {
  const bool direct = c_->spec.copy.route == CopyRoute::kDirect;
  if (c_->spec.copy.route == CopyRoute::kRelay) return choose(CopyRoute::kRelay, "route: relay");
  if (!c_->spec.copy.keep_local.empty()) {
    if (direct) {
      return c_->fail("route: direct cannot keep_local: the bytes never reach the coordinator; use relay or auto");
    }
    return choose(CopyRoute::kRelay, "keep_local: the coordinator keeps a copy, so the bytes pass through it");
  }
  if (!both_ssh(c_->spec.copy)) {
    const CopyStageSpec& copy = c_->spec.copy;
    const bool from_ssh = copy.from_transport == Transport::kSsh;
    const std::string not_ssh = "'" + (from_ssh ? copy.to_host : copy.from_host) + "' uses transport: " +
                                transport_name(from_ssh ? copy.to_transport : copy.from_transport);
    if (direct) return c_->fail("route: direct needs both hosts on transport: ssh; " + not_ssh);
    return choose(CopyRoute::kRelay, not_ssh);
  }
  ask_hosts();
}

// The agents' own binaries and workdirs: the push runs the source's, and its ssh
// starts the destination's (installed there already: this coordinator reached it).
void CopyStage::ask_hosts() {
  auto self = shared_from_this();
  say_hello(c_->spec.copy.from_host, [self](std::string exe, std::string workdir) {
    self->places_.src_exe = std::move(exe);
    self->places_.src_workdir = std::move(workdir);
    self->say_hello(self->c_->spec.copy.to_host, [self](std::string exe, std::string workdir) {
      self->places_.dest_exe = std::move(exe);
      self->places_.dest_workdir = std::move(workdir);
      self->find_push();
    });
  });
}

// One host's `hello`: its agent's binary and workdir, handed to `then`. A transient
// failure asks both hosts again later; any other fails the stage.
void CopyStage::say_hello(const std::string& host, std::function<void(std::string exe, std::string workdir)> then) {
  auto self = shared_from_this();
  c_->env.call_agent(host, "hello", nlohmann::json::object(), [self, host, then](Result<protocol::Frame> r) {
    if (self->c_->finished) return;
    if (!r.ok()) {
      if (transient_link_failure(r.status())) return self->c_->retry_later([self] { self->ask_hosts(); });
      return self->c_->fail("reaching " + host + ": " + r.status().message());
    }
    then(r->header.value("exe", std::string()), r->header.value("workdir", std::string()));
  });
}

// A push this very attempt started (before a coordinator crash, `ferry resume`
// brings us here with the same token) is followed, whatever a probe would say now.
void CopyStage::find_push() {
  if (c_->spec.id.job.empty()) return probe_route();
  auto self = shared_from_this();
  protocol::JobRef push{c_->spec.id.job, c_->spec.id.attempt, c_->spec.id.token};
  c_->env.call_agent(c_->spec.copy.from_host, protocol::JobRef::kOp, push.to_json(), [self](Result<protocol::Frame> r) {
    if (self->c_->finished) return;
    if (r.ok()) {
      auto rec = protocol::JobRecord::from_json(r->header);
      self->route_ = CopyRoute::kDirect;
      self->route_reason_ = "this attempt's push is on " + self->c_->spec.copy.from_host + " (" +
                            (rec.ok() ? enum_name(protocol::kJobStateNames, rec->state) : "?") + "): re-attached";
      self->c_->env.record_event("copy.started", {{"route", copy_route_name(self->route_)},
                                                  {"reason", self->route_reason_},
                                                  {"files", self->c_->files.size()},
                                                  {"bytes", self->c_->bytes.total},
                                                  {"streams", self->c_->lanes},
                                                  {"chunk_size", self->c_->spec.chunk_size}});
      self->report_progress();
      self->direct_ = std::make_shared<DirectCopy>(self->c_, self->places_);
      return self->direct_->start(true);
    }
    if (r.status().code() == StatusCode::kNotFound) return self->probe_route();
    if (transient_link_failure(r.status())) return self->c_->retry_later([self] { self->find_push(); });
    self->c_->fail("looking for this attempt's push on " + self->c_->spec.copy.from_host + ": " + r.status().message());
  });
}

void CopyStage::probe_route() {
  const std::string target = c_->spec.copy.to_address + ":" + std::to_string(c_->spec.copy.to_port);
  if (places_.src_exe.empty() || places_.dest_exe.empty() || places_.dest_workdir.empty()) {
    std::string why = "the agents did not say where they are installed";
    if (c_->spec.copy.route == CopyRoute::kDirect) return c_->fail("route: direct: " + why);
    return choose(CopyRoute::kRelay, why);
  }
  auto self = shared_from_this();
  protocol::NetProbeArgs args{c_->spec.copy.to_address, c_->spec.copy.to_port, kProbeTimeoutMs};
  call_op(c_->env, c_->spec.copy.from_host, args, [self, target](Result<protocol::NetProbeReply> probe) {
    if (self->c_->finished) return;
    const CopyStageSpec& s = self->c_->spec.copy;
    if (!probe.ok()) {
      if (transient_link_failure(probe.status())) return self->c_->retry_later([self] { self->probe_route(); });
      return self->c_->fail("probing " + target + " from " + s.from_host + ": " + probe.status().message());
    }
    const std::string error = probe->error.empty() ? "unreachable" : probe->error;
    if (probe->reachable) {
      return self->choose(CopyRoute::kDirect, s.from_host + " reaches " + s.to_host + " at " + target);
    }
    std::string why = s.from_host + " cannot reach " + s.to_host + " at " + target + " (" + error + ")";
    if (s.route == CopyRoute::kDirect) {
      return self->c_->fail("route: direct: host '" + s.from_host + "' cannot reach host '" + s.to_host + "' at " +
                            target + " (" + error + "); link them, or use route: relay or auto");
    }
    self->choose(CopyRoute::kRelay, why);
  });
}

void CopyStage::choose(CopyRoute route, const std::string& reason) {
  route_ = route;
  route_reason_ = reason;
  c_->env.record_event("copy.started", {{"route", copy_route_name(route_)},
                                        {"reason", reason},
                                        {"files", c_->files.size()},
                                        {"bytes", c_->bytes.total},
                                        {"streams", c_->lanes},
                                        {"chunk_size", c_->spec.chunk_size}});
  report_progress();
  if (route_ == CopyRoute::kDirect) {
    direct_ = std::make_shared<DirectCopy>(c_, places_);
    return direct_->start(false);
  }
  const CopyStageSpec& s = c_->spec.copy;
  c_->log_relay("relay from " + s.from_host + ":" + s.from + " to " + s.to_host + ":" + s.to +
                (s.keep_local.empty() ? "" : " and here to " + s.keep_local) + ": " + std::to_string(c_->files.size()) +
                (c_->files.size() == 1 ? " file, " : " files, ") + byte_size(static_cast<double>(c_->bytes.total)) +
                " (" + reason + ")");
  relay_ = std::make_shared<RelayCopy>(c_);
  relay_->start();
}

void CopyStage::report_progress() {
  if (c_->finished) return;
  double secs = std::max(0.001, (now_ms() - started_ms_) / 1000.0);
  // A direct copy's rate is the push's own: it may have run before this coordinator did.
  double rate = route_ == CopyRoute::kDirect ? (direct_ ? direct_->rate() : 0)
                                             : static_cast<double>(c_->bytes.done - c_->bytes.skipped) / secs;
  nlohmann::json p = {{"bytes_done", c_->bytes.done},
                      {"bytes_total", c_->bytes.total},
                      {"rate", rate},
                      {"route", route_ == CopyRoute::kAuto ? "?" : copy_route_name(route_)},
                      {"files", c_->files.size()},
                      {"bytes_resent", c_->bytes.resent}};
  if (rate > 0) p["eta_s"] = static_cast<double>(c_->bytes.total - c_->bytes.done) / rate;
  c_->env.set_progress(p);
  progress_timer_.expires_after(std::chrono::milliseconds(kProgressEveryMs));
  auto self = shared_from_this();
  progress_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (!ec) self->report_progress();
  });
}

void CopyStage::cancel(bool hard) {
  if (c_->finished) return;
  c_->cancelled = true;
  if (direct_) return direct_->cancel(hard);  // the push's own end finishes this stage
  StageOutcome o;
  o.state = StageOutcome::State::kCancelled;
  o.error = "cancelled";
  finish(std::move(o));
}

void CopyStage::finish(StageOutcome o) {
  if (c_->finished) return;
  double secs =
      direct_ && direct_->seconds() > 0 ? direct_->seconds() : std::max(0.001, (now_ms() - started_ms_) / 1000.0);
  o.metrics = {{"bytes_total", static_cast<double>(c_->bytes.total)},
               {"bytes_sent", static_cast<double>(c_->bytes.sent)},
               {"bytes_resent", static_cast<double>(c_->bytes.resent)},
               {"bytes_already_there", static_cast<double>(c_->bytes.skipped)},
               {"seconds", secs},
               {"mib_per_s", static_cast<double>(c_->bytes.sent) / secs / (1 << 20)}};
  report_progress();
  c_->finished = true;
  progress_timer_.cancel();
  if (relay_) {
    std::string line = "relay " + std::string(outcome_state_name(o.state)) + ": " +
                       byte_size(static_cast<double>(c_->bytes.sent)) + " sent in " +
                       duration_text(static_cast<int64_t>(secs * 1000)) + " (" +
                       byte_size(static_cast<double>(c_->bytes.sent) / secs) + "/s)";
    if (c_->bytes.resent > 0) line += ", " + byte_size(static_cast<double>(c_->bytes.resent)) + " of it sent again";
    if (c_->bytes.skipped > 0) line += ", " + byte_size(static_cast<double>(c_->bytes.skipped)) + " already there";
    c_->log_relay(line + (o.error.empty() ? "" : ": " + o.error));
  }
  c_->env.record_event("copy.finished", {{"state", outcome_state_name(o.state)},
                                         {"bytes_sent", c_->bytes.sent},
                                         {"bytes_resent", c_->bytes.resent},
                                         {"seconds", secs}});
  auto done = std::move(done_);
  done(std::move(o));
}

}  // namespace ferry
