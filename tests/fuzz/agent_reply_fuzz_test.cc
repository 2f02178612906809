// The coordinator's side of the wire on mutated agent replies: the readers and
// validators the copy stages run on every reply (protocol/ops/fs.h's from_json,
// transfer/copy_plan.h) and the host connection's
// reader (orchestrator/hosts/host_connection.h) behind a transport that answers with
// mutated frames. Every reply is taken or refused with a Status, never an exception
// out of a validator, a crash or a call left without its answer.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "orchestrator/hosts/host_connection.h"
#include "protocol/ops/fs.h"
#include "protocol/ops/recv.h"
#include "tests/fuzz/fuzz_rounds.h"
#include "tests/fuzz/random_input.h"
#include "tests/fuzz/wire_frame.h"
#include "transfer/copy_plan.h"

namespace ferry::fuzz {
namespace {

// What agents answer: each op's reply as the relay and the push read it.
std::vector<nlohmann::json> reply_seeds() {
  return {
      {{"type", "file"}, {"files", {{{"path", ""}, {"size", 5000000}, {"mode", 0644}, {"mtime_ns", 1}, {"ino", 2}}}}},
      {{"type", "dir"},
       {"files",
        {{{"path", "a"}, {"size", 3}, {"mode", 0644}}, {{"path", "sub/b"}, {"size", 4194305}, {"mode", 0755}}}}},
      {{"chunks", {{"0", "h0"}, {"1", "h1"}, {"2", "h2"}}}},
      {{"complete", false}, {"have", {{"0", "h0"}, {"2", "h2"}}}},
      {{"complete", true}, {"have", nlohmann::json::object()}},
      {{"committed", false}, {"bad", {1}}, {"error", "chunk 1 differs"}},
      {{"committed", true}},
      {{"exists", true}, {"type", "file"}, {"size", 5000000}, {"mtime_ns", 1}, {"ino", 2}, {"path", "/x"}},
      {{"code", 5}, {"message", "no such file"}},
      {{"removed", {"a"}}, {"removed_count", 1}},
      {{"protocol", 1}, {"version", "0.1"}, {"pid", 7}, {"workdir", "/w"}, {"hostname", "h"}, {"exe", "/e"}},
  };
}

// A mutated reply header as the coordinator would hold it: through the wire and the decoder.
std::optional<nlohmann::json> mutated_reply(Mutator& m, const std::vector<nlohmann::json>& seeds,
                                            const std::vector<std::string>& wires) {
  const nlohmann::json& seed = seeds[m.below(seeds.size())];
  std::string wire = m.chance(75) ? wire_frame(2, 1, wire_text(m.mutate_json(seed)))
                                  : m.mutate_bytes(wire_frame(2, 1, wire_text(seed)), wires);
  protocol::FrameDecoder d;
  d.feed(wire.data(), wire.size());
  auto f = d.next();
  if (!f.ok() || !f->has_value()) return std::nullopt;
  return std::move((*f)->header);
}

// A listing as a sender takes it: read through FsListReply (refused naming a field), then planned.
Result<CopyListing> plan_reply(const nlohmann::json& listing, const std::string& to, int64_t chunk_size) {
  auto read = protocol::FsListReply::from_json(listing);
  if (!read.ok()) {
    EXPECT_EQ(read.status().message().rfind("the fs.list reply", 0), 0u) << read.status().message();
    return read.status();
  }
  return plan_copy(std::move(read).value(), "/src", to, chunk_size);
}

// Runs the readers and validators on `reply` as each kind of answer a copy reads,
// checking what each promises of what it accepts.
void check_validators(const nlohmann::json& listing, const nlohmann::json& reply, int64_t chunk_size) {
  auto planned = plan_reply(listing, "/dst/", chunk_size);
  auto hashes = protocol::FsHashReply::from_json(reply);
  auto stat = protocol::FsStatReply::from_json(reply);
  protocol::Frame err;
  err.type = protocol::FrameType::kError;
  err.header = reply;
  EXPECT_FALSE(protocol::status_from_error_frame(err).ok());
  auto begun = protocol::RecvBeginReply::from_json(reply);
  auto commit = protocol::RecvCommitReply::from_json(reply);
  for (const auto* read : {&hashes.status(), &stat.status(), &begun.status(), &commit.status()}) {
    if (!read->ok()) {
      EXPECT_EQ(read->message().rfind("the ", 0), 0u) << read->message();  // names the reply
    }
  }
  if (hashes.ok()) {
    for (const auto& [index, hash] : hashes->chunks) EXPECT_GE(index, 0);
  }
  if (!planned.ok()) {
    EXPECT_FALSE(planned.status().message().empty());
    return;
  }
  int64_t total = 0;
  for (CopyFile& f : planned->files) {
    ASSERT_GE(f.size, 0);
    ASSERT_LE(f.size, kMaxCopyFileBytes);
    ASSERT_EQ(static_cast<int64_t>(f.hashes.size()), f.chunks);
    ASSERT_GE(f.chunks * chunk_size, f.size);
    if (planned->is_dir) {
      EXPECT_TRUE(check_copy_rel(f.rel).ok()) << f.rel;
    }
    total += f.size;
    Status taken = hashes.ok() ? take_chunk_hashes(hashes->chunks, &f) : hashes.status();
    if (taken.ok()) {
      for (const auto& h : f.hashes) EXPECT_FALSE(h.empty());
    }
    if (begun.ok()) apply_recv_begin(&f, *begun);
    for (const auto& [index, hash] : f.dest_have) {
      EXPECT_GE(index, 0);
      EXPECT_LT(index, f.chunks);
    }
    for (int64_t bad : commit.ok() ? recv_commit_bad(*commit, f) : std::vector<int64_t>{}) {
      EXPECT_GE(bad, 0);
      EXPECT_LT(bad, f.chunks);
    }
    if (stat.ok()) {
      (void)source_change(*stat, f);
      (void)dest_may_hold(*stat, f.size);
    }
    if (taken.ok()) (void)source_hashes(f);
  }
  EXPECT_EQ(total, planned->bytes_total);
}

TEST(AgentReplyFuzzTest, MutatedRepliesAreTakenOrRefusedByTheCopyValidators) {
  const std::vector<nlohmann::json> seeds = reply_seeds();
  std::vector<std::string> wires;
  for (const auto& s : seeds) wires.push_back(wire_frame(2, 1, s.dump()));
  FuzzPlan plan = fuzz_plan(6000);
  int planned = 0, refused = 0;
  for_each_round(plan, "AgentReplyFuzzTest.validators", [&](Mutator& m, int) {
    // A listing (mutated or not) and one more reply of any kind, read as every kind.
    std::optional<nlohmann::json> listing =
        m.chance(30) ? std::optional<nlohmann::json>(seeds[m.below(2)]) : mutated_reply(m, seeds, wires);
    std::optional<nlohmann::json> reply = m.chance(20)
                                              ? std::optional<nlohmann::json>(seeds[2 + m.below(seeds.size() - 2)])
                                              : mutated_reply(m, seeds, wires);
    if (!listing || !reply) return;
    const int64_t chunk_size = m.chance(50) ? (2 << 20) : 4096;
    check_validators(*listing, *reply, chunk_size);
    plan_reply(*listing, "/dst", chunk_size).ok() ? ++planned : ++refused;
  });
  expect_outcomes(plan, "listings", {{"planned", planned, 100}, {"refused", refused, 100}});
}

// A listing whose sizes would need more chunk hashes than a coordinator should hold
// is refused, not allocated (a 1 PiB "file" at 4 KiB chunks is 2^38 of them).
TEST(AgentReplyFuzzTest, AListingThatNeedsTooManyChunksIsRefusedNotAllocated) {
  nlohmann::json listing = {{"type", "file"}, {"files", {{{"path", ""}, {"size", int64_t{1} << 50}}}}};
  auto planned = plan_reply(listing, "/dst", 4096);
  ASSERT_FALSE(planned.ok());
  EXPECT_NE(planned.status().message().find("chunks"), std::string::npos) << planned.status().message();
  // Many large files: the total is bounded too (and never overflows).
  nlohmann::json many = {{"type", "dir"}, {"files", nlohmann::json::array()}};
  for (int i = 0; i < 9000; ++i)
    many["files"].push_back({{"path", "f" + std::to_string(i)}, {"size", int64_t{1} << 50}});
  EXPECT_FALSE(plan_reply(many, "/dst", int64_t{1} << 40).ok());
}

// A stat reply whose fields have other types is refused naming the field, not an exception
// and never taken for a file that is there.
TEST(AgentReplyFuzzTest, AStatReplyOfTheWrongShapeIsRefusedByName) {
  const std::pair<nlohmann::json, std::string> replies[] = {
      {{{"exists", 1}, {"type", "file"}, {"size", 5}}, "exists"},
      {{{"exists", true}, {"type", 7}, {"size", 5}}, "type"},
      {{{"exists", true}, {"type", "file"}, {"size", "5"}}, "size"},
      {nlohmann::json::array(), "an array"},
  };
  for (const auto& [reply, named] : replies) {
    auto read = protocol::FsStatReply::from_json(reply);
    ASSERT_FALSE(read.ok()) << reply.dump();
    EXPECT_NE(read.status().message().find("the fs.stat reply"), std::string::npos) << read.status().message();
    EXPECT_NE(read.status().message().find(named), std::string::npos) << read.status().message();
  }
  auto there = protocol::FsStatReply::from_json({{"exists", true}, {"type", "file"}, {"size", 5}});
  ASSERT_TRUE(there.ok()) << there.status().message();
  EXPECT_TRUE(dest_may_hold(*there, 5));
  EXPECT_FALSE(dest_may_hold(*there, 6));
}

// An agent behind a scripted byte stream: it answers each request the coordinator
// writes with a mutated frame (wrong ids, types, headers, truncated streams, silence).
class MutatedAgentTransport : public AgentTransport {
 public:
  MutatedAgentTransport(uint64_t seed, int round, int link, const std::vector<nlohmann::json>* seeds)
      : m_(seed, round * 16 + link),
        seeds_(seeds) {}
  Status open() override { return m_.chance(5) ? unavailable("scripted open failure") : Status(); }
  Result<size_t> read_some(char* buf, size_t n, int timeout_ms) override {
    if (out_.empty()) {
      if (ended_) return unavailable("scripted end of stream");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 5)));
      return size_t{0};
    }
    size_t k = std::min({n, out_.size(), 1 + m_.below(4096)});
    std::memcpy(buf, out_.data(), k);
    out_.erase(0, k);
    return k;
  }
  Status write_all(const char* data, size_t n) override {
    in_.feed(data, n);
    for (;;) {
      auto f = in_.next();
      if (!f.ok() || !f->has_value()) break;
      answer(**f);
    }
    return Status();
  }
  void close() override {}
  std::string describe() const override { return "mutated agent"; }

 private:
  void answer(const protocol::Frame& request) {
    const std::string op = request.header.value("op", std::string());
    nlohmann::json reply = op == "hello" ? seeds_->back() : (*seeds_)[m_.below(seeds_->size())];
    uint32_t id = m_.chance(90) ? request.request_id : static_cast<uint32_t>(m_.odd_word());
    uint8_t type = m_.chance(70) ? 2 : static_cast<uint8_t>(1 + m_.below(4));
    std::string wire = wire_frame(type, id, wire_text(m_.chance(40) ? m_.mutate_json(reply) : reply));
    if (m_.chance(15)) wire = m_.mutate_bytes(wire, {});
    if (m_.chance(5)) return;  // silence
    out_ += wire;
    if (m_.chance(3)) ended_ = true;
  }

  Mutator m_;
  const std::vector<nlohmann::json>* seeds_;
  protocol::FrameDecoder in_;
  std::string out_;
  bool ended_ = false;
};

TEST(AgentReplyFuzzTest, HostConnectionAnswersEveryCallWhateverTheAgentSends) {
  const std::vector<nlohmann::json> seeds = reply_seeds();
  FuzzPlan plan = fuzz_plan(120);
  int got_frames = 0, got_errors = 0;
  for_each_round(plan, "AgentReplyFuzzTest.host_connection", [&](Mutator&, int round) {
    boost::asio::io_context io;
    ConnectionOptions options;
    options.dead_after_s = 0.3;
    options.ping_every_s = 0.1;
    options.give_up_s = 0.5;
    options.backoff_initial_s = 0.01;
    options.backoff_max_s = 0.05;
    auto links = std::make_shared<int>(0);
    auto conn = std::make_shared<HostConnection>(
        io, "fuzzhost",
        [&, links] { return std::make_unique<MutatedAgentTransport>(plan.seed, round, (*links)++ % 16, &seeds); },
        options);
    conn->start([](bool, const std::string&) {});
    const int calls = 4;
    std::vector<int> answered(calls, 0);
    for (int c = 0; c < calls; ++c) {
      conn->call(c % 2 ? "fs.stat" : "fs.hash", {{"path", "x"}}, [&, c](Result<protocol::Frame> r) {
        ++answered[c];
        if (r.ok()) {
          ++got_frames;
          EXPECT_TRUE(r->header.is_object());
        } else {
          ++got_errors;
        }
      });
    }
    auto all_answered = [&] {
      for (int a : answered) {
        if (a == 0) return false;
      }
      return true;
    };
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!all_answered() && std::chrono::steady_clock::now() < until) {
      // No handler posted yet returns at once: wait a little rather than spin.
      if (io.run_for(std::chrono::milliseconds(20)) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      io.restart();
    }
    conn->stop();
    io.restart();
    io.poll();
    for (int c = 0; c < calls; ++c) {
      EXPECT_EQ(answered[c], 1) << "call " << c << " answered " << answered[c] << " times";
    }
  });
  expect_outcomes(plan, "calls answered", {{"with a frame", got_frames}, {"with an error", got_errors}});
}

}  // namespace
}  // namespace ferry::fuzz
