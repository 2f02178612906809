#include "jobs/copy/copy_context.h"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

namespace ferry {

CopySpec copy_spec(const CopyStageSpec& c, StageEnv& env, const AttemptId& id) {
  CopySpec spec{c, id};
  if (!c.keep_local.empty()) spec.copy.keep_local = env.local_path(c.keep_local);
  return spec;
}

CopyContext::CopyContext(StageEnv& e, CopySpec s) : env(e), spec(std::move(s)), lanes(std::max(1, spec.copy.streams)) {}

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

void CopyContext::log_relay(const std::string& line) {
  if (spec.relay_writes_log) (void)env.append_log(line + "\n");  // a log it cannot write fails no copy
}

void CopyContext::retry_later(std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(env.io(), std::chrono::milliseconds(kRetryMs));
  auto self = shared_from_this();
  timer->async_wait([self, timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec && !self->finished) fn();
  });
}

}  // namespace ferry
