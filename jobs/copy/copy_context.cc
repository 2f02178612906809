#include "jobs/copy/copy_context.h"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

namespace ferry {

CopySpec copy_spec(const CopyStageSpec& c, StageEnv& env, const AttemptId& id) {
  CopySpec spec;
  spec.from_host = c.from_host;
  spec.from_path = c.from;
  spec.to_host = c.to_host;
  spec.to_path = c.to;
  spec.keep_local = c.keep_local.empty() ? "" : env.local_path(c.keep_local);
  spec.route = c.route;
  spec.streams = c.streams;
  spec.from_ssh = c.from_ssh;
  spec.to_ssh = c.to_ssh;
  spec.to_address = c.to_address;
  spec.to_port = c.to_port;
  spec.to_user = c.to_user;
  spec.give_up_s = c.to_give_up_s;
  spec.attempt = id;
  return spec;
}

CopyContext::CopyContext(StageEnv& e, CopySpec s) : env(e), spec(std::move(s)), lanes(std::max(1, spec.streams)) {}

std::vector<std::string> CopyContext::file_rels() const {
  std::vector<std::string> rels;
  rels.reserve(files.size());
  for (const auto& f : files) rels.push_back(f.rel);
  return rels;
}

void CopyContext::fail(const std::string& why) {
  StageOutcome o;
  o.error = why;
  finish(std::move(o));
}

void CopyContext::retry_later(std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(env.io(), std::chrono::milliseconds(kRetryMs));
  auto self = shared_from_this();
  timer->async_wait([self, timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec && !self->finished) fn();
  });
}

bool CopyContext::transient(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kCancelled;
}

}  // namespace ferry
