#include "jobs/eval/stage/remote/host_file_upload.h"

#include <sys/stat.h>

#include <boost/asio/steady_timer.hpp>

#include "protocol/frame.h"
#include "protocol/ops/recv.h"
#include "transfer/chunk_files.h"
#include "transfer/copy_plan.h"

namespace ferry {
namespace {

}  // namespace

Result<std::string> HostFileUpload::file_hash(const std::string& local) {
  auto hashes = hash_chunks(local, kChunkBytes, {});
  if (!hashes.ok()) return hashes.status();
  std::vector<std::string> v;
  for (auto& [i, h] : *hashes) v.push_back(h);
  return file_hash_of(v);
}

HostFileUpload::HostFileUpload(StageEnv& env, HostFile file) : env_(env), file_(std::move(file)) {}

void HostFileUpload::start(std::function<void(Status, int64_t)> done) {
  done_ = std::move(done);
  struct stat st;
  if (::stat(file_.local.c_str(), &st) != 0) return finish(errno_status("stat " + file_.local, errno));
  size_ = st.st_size;
  auto hashes = hash_chunks(file_.local, kChunkBytes, {});
  if (!hashes.ok()) return finish(hashes.status());
  for (auto& [i, h] : *hashes) hashes_.push_back(h);
  have_.assign(hashes_.size(), false);
  begin();
}

void HostFileUpload::retry(std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(env_.io(), std::chrono::milliseconds(kRetryMs));
  auto self = shared_from_this();
  timer->async_wait([self, timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec && !self->abandoned_) fn();
  });
}

void HostFileUpload::begin() {
  const nlohmann::json args =
      protocol::RecvBeginArgs{file_.dest, size_, kChunkBytes, file_.mode, file_hash_of(hashes_), ""}.to_json();
  auto self = shared_from_this();
  env_.call_agent(file_.host, protocol::RecvBeginArgs::kOp, args, [self](Result<protocol::Frame> r) {
    if (self->abandoned_) return;
    if (!r.ok()) {
      if (transient_link_failure(r.status())) return self->retry([self] { self->begin(); });
      return self->finish(r.status());
    }
    auto begun = protocol::RecvBeginReply::from_json(r->header);
    if (!begun.ok()) return self->finish(data_loss("uploading " + self->file_.dest + ": " + begun.status().message()));
    if (begun->complete) return self->finish(Status());  // already there
    self->have_.assign(self->hashes_.size(), false);     // what the host's part file holds now
    for (const auto& [i, h] : begun->have) {
      if (i >= 0 && static_cast<size_t>(i) < self->hashes_.size() && h == self->hashes_[i]) self->have_[i] = true;
    }
    self->send(0);
  });
}

void HostFileUpload::send(size_t index) {
  while (index < hashes_.size() && have_[index]) ++index;
  if (index == hashes_.size()) return commit();
  std::string hash;
  int64_t len = copy_chunk_len(size_, kChunkBytes, static_cast<int64_t>(index));
  auto data = read_chunk(file_.local, static_cast<int64_t>(index) * kChunkBytes, len, &hash);
  if (!data.ok()) return finish(data.status());
  if (hash != hashes_[index]) return finish(data_loss(file_.local + " changed while it was being sent"));
  nlohmann::json args =
      protocol::RecvWriteArgs{file_.dest, static_cast<int64_t>(index), kChunkBytes, hash, ""}.to_json();
  auto self = shared_from_this();
  // Lane 0 is the host's main connection, the one call_agent uses.
  env_.call_agent_lane(file_.host, 0, protocol::RecvWriteArgs::kOp, args, std::move(data).value(),
                       [self, index, len](Result<protocol::Frame> r) {
                         if (self->abandoned_) return;
                         if (!r.ok()) {
                           if (transient_link_failure(r.status())) return self->retry([self] { self->begin(); });
                           return self->begin_again(r.status());
                         }
                         self->have_[index] = true;
                         self->sent_ += len;
                         self->send(index + 1);
                       });
}

void HostFileUpload::commit() {
  nlohmann::json args = protocol::RecvCommitArgs{file_.dest, kChunkBytes, hashes_, ""}.to_json();
  // The hashes ride in the body: a large model file has more than a header holds.
  auto hashes = protocol::move_field_to_body(&args, "chunks", "the chunk hashes of " + file_.dest);
  if (!hashes.ok()) return finish(hashes.status());
  auto self = shared_from_this();
  env_.call_agent_lane(
      file_.host, 0, protocol::RecvCommitArgs::kOp, args, std::move(hashes).value(), [self](Result<protocol::Frame> r) {
        if (self->abandoned_) return;
        if (!r.ok()) {
          if (transient_link_failure(r.status())) return self->retry([self] { self->begin(); });
          return self->begin_again(r.status());
        }
        auto commit = protocol::RecvCommitReply::from_json(r->header);
        if (!commit.ok()) {
          return self->finish(data_loss("uploading " + self->file_.dest + ": " + commit.status().message()));
        }
        if (!commit->committed) {
          // Chunks that went bad on the host's disk: send them again, a few times.
          if (++self->recommits_ > kMaxRecommits) {
            return self->finish(data_loss("uploading " + self->file_.dest + ": " +
                                          (commit->error.empty() ? "chunks failed verification" : commit->error)));
          }
          for (int64_t i : commit->bad) {
            if (i >= 0 && static_cast<size_t>(i) < self->have_.size()) self->have_[static_cast<size_t>(i)] = false;
          }
          return self->send(0);
        }
        self->finish(Status());
      });
}

// Another upload of the same file to the same place (two evals starting on one
// host at once) may commit the part file this one was writing: begin again, and
// find the file complete.
void HostFileUpload::begin_again(const Status& why) {
  if (++restarts_ > kMaxRestarts) return finish(why);
  begin();
}

void HostFileUpload::finish(Status s) {
  if (abandoned_ || !done_) return;
  auto done = std::move(done_);
  done_ = nullptr;
  if (!s.ok()) s = s.with_context("uploading " + file_.local + " to " + file_.host + ":" + file_.dest);
  done(s, sent_);
}

}  // namespace ferry
