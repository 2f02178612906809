// The readers of what hosts answer beyond the copy path (review 3, N2 and the F2
// residual): an eval worker's result (jobs/eval/stage/eval_outcome.h), the replies an upload
// to a host reads (HostFileUpload: recv.begin, recv.write, recv.commit), the
// listing a checkpoint watch groups (checkpoint_scan.h) and the report `ferry hosts
// check` prints (hosts_check.h). Each mutated input ends in an outcome or an
// error, never an exception, a crash or a call left waiting.
#include <gtest/gtest.h>

#include <set>

#include "base/peer_json.h"
#include "base/terminal_text.h"
#include "jobs/eval/run/eval_report_json.h"
#include "jobs/eval/run/shard_merge.h"
#include "jobs/eval/stage/eval_outcome.h"
#include "jobs/eval/stage/eval_progress_reader.h"
#include "jobs/eval/stage/remote/host_file_upload.h"
#include "jobs/eval/stage/watch/checkpoint_scan.h"
#include "orchestrator/hosts/hosts_check.h"
#include "protocol/frame.h"
#include "tests/fuzz/fuzz_rounds.h"
#include "tests/fuzz/random_input.h"
#include "tests/support/process.h"
#include "tests/support/scripted_stage_env.h"

namespace ferry::fuzz {
namespace {

using ScriptedEnv = testing::ScriptedStageEnv;

// JSON as a reply header can hold it: the frame decoder refuses deeper nesting
// (protocol/frame.h), so these readers never see it; discarded otherwise.
nlohmann::json header_json(const std::string& text) {
  if (json_nesting_depth(text) > protocol::kMaxHeaderDepth) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(text, nullptr, false);
}

// A worker's result as the engine writes it (eval_plugin_api.h), cut to its shape.
nlohmann::json result_seed() {
  return {{"ok", true},
          {"text", "DFlash drafter eval\n"},
          {"metrics", {{"tau", 3.5}, {"reference_tau", 1.5}, {"speedup", 2.0}, {"acceptance_rate_1", 0.9}}},
          {"gate_passed", true},
          {"gate_message", ""},
          {"report",
           {{"drafter", "ckpt"},
            {"candidate", {{"tau", 3.5}, {"acceptance_histogram", {0, 1, 2}}}},
            {"responses", {{{"line", 1}, {"tau", 3.5}, {"text", "hi"}}}}}}};
}

// An eval's progress line from a host's log (jobs/eval/stage/eval_progress_reader.h): mutated,
// it is read as progress with only the known fields, or not at all; never a throw.
TEST(HostResultFuzzTest, MutatedProgressLinesAreReadOrDroppedNeverThrown) {
  const nlohmann::json seed = {{"phase", "candidate"}, {"run", 1},           {"runs", 2},
                               {"prompts_done", 3},    {"prompts_total", 9}, {"tokens", 300},
                               {"tokens_per_s", 12.5}, {"eta_s", 40},        {"tau", 3.25}};
  const std::vector<std::string> wires = {seed.dump()};
  const std::set<std::string> known = {"kind",          "phase",  "run",          "runs",  "prompts_done",
                                       "prompts_total", "tokens", "tokens_per_s", "eta_s", "tau"};
  FuzzPlan plan = fuzz_plan(4000);
  int read = 0, dropped = 0;
  for_each_round(plan, "HostResultFuzzTest.progress", [&](Mutator& m, int) {
    std::string text = m.chance(70) ? wire_text(m.mutate_json(seed)) : m.mutate_bytes(wires[0], wires);
    auto p = read_eval_progress("progress " + text);
    if (p) {
      ++read;
      for (const auto& [key, value] : p->items()) {
        EXPECT_EQ(known.count(key), 1u) << key;
        EXPECT_TRUE(value.is_primitive()) << key;
      }
    } else {
      ++dropped;
    }
  });
  expect_outcomes(plan, "progress lines", {{"read", read, 50}, {"dropped", dropped, 100}});
}

TEST(HostResultFuzzTest, MutatedEvalResultsBecomeAnOutcomeNeverAnException) {
  const nlohmann::json seed = result_seed();
  const std::vector<std::string> wires = {seed.dump(), R"({"ok":false,"error":"no model"})"};
  FuzzPlan plan = fuzz_plan(4000);
  int succeeded = 0, failed = 0;
  for_each_round(plan, "HostResultFuzzTest.eval_outcome", [&](Mutator& m, int) {
    std::string text = m.chance(70) ? wire_text(m.mutate_json(seed)) : m.mutate_bytes(wires[m.below(2)], wires);
    ScriptedEnv env(
        [](const std::string&, const nlohmann::json&) -> Result<protocol::Frame> { return protocol::Frame(); });
    StageOutcome o = eval_outcome(text, /*cancelled=*/m.chance(10), /*append_text=*/true, env);
    if (o.state == StageOutcome::State::kSucceeded) {
      ++succeeded;
      ASSERT_EQ(env.events.size(), 1u);
      EXPECT_LE(env.events[0].second.size(), kMaxStoredReportBytes + 1024);
      for (const auto& [name, value] : o.metrics) {
        EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"),
                  std::string::npos)
            << name;
      }
    } else {
      ++failed;
      EXPECT_FALSE(o.error.empty());
    }
  });
  expect_outcomes(plan, "eval results", {{"taken", succeeded, 100}, {"failed", failed, 100}});
}

// Shard i of 2 of a 4-prompt eval with block 4, as a worker's report holds it.
eval::EvalReport shard_seed(int i) {
  eval::EvalReport r;
  r.drafter = "ckpt";
  r.prompts = "prompts.jsonl";
  r.block_size = 4;
  r.max_new_tokens = 8;
  r.prompt_count = 2;
  r.shard = eval::ShardOf::slice(i, 2, 4);
  r.fingerprints = {{"drafter", "6d0c2a7f3e914b58a1d2c3b4e5f60718", ""},
                    {"prompts", "0f1e2d3c4b5a69788796a5b4c3d2e1f0", ""}};
  r.candidate.label = "candidate";
  r.candidate.block_size = 4;
  r.candidate.responses = 2;
  r.candidate.response_taus = {2.5, 1.0 + i};
  r.candidate.acceptance_histogram = {0, 3, 1, 2, 1};
  r.candidate.accepted_at = {0, 4, 3, 1};
  r.candidate.steps = 7;
  r.candidate.generated_tokens = 16;
  r.candidate.tpot_sum = 0.5;
  r.candidate.tpot_count = 2;
  r.responses = {eval::make_response_text(2 * i + 1, {5, 6, 7}, {2, 1}, nullptr),
                 eval::make_response_text(2 * i + 2, {8}, {1}, nullptr)};
  return r;
}

// A shard's report as the merge of a sharded eval reads it (jobs/eval/stage/eval_merge_stage.h):
// mutated, it is read typed and merged, or refused with a message; never a throw.
TEST(HostResultFuzzTest, MutatedShardReportsAreMergedOrRefusedNeverThrown) {
  const nlohmann::json seeds[] = {shard_seed(0).to_json(), shard_seed(1).to_json()};
  ASSERT_TRUE(
      eval::merge_shard_reports({*eval::eval_report_from_json(seeds[0]), *eval::eval_report_from_json(seeds[1])}, {},
                                2.0, std::nullopt)
          .ok());
  const std::vector<std::string> wires = {seeds[0].dump(), seeds[1].dump()};
  FuzzPlan plan = fuzz_plan(3000);
  int merged = 0, refused = 0;
  for_each_round(plan, "HostResultFuzzTest.shard_merge", [&](Mutator& m, int) {
    const size_t which = m.below(2);  // the shard mutated; the other stays as written
    std::string text = m.chance(80) ? wire_text(m.mutate_json(seeds[which])) : m.mutate_bytes(wires[which], wires);
    auto parsed = parse_peer_json(text, "a shard's report");
    if (!parsed.ok()) {
      ++refused;
      return;
    }
    auto part = eval::eval_report_from_json(*parsed);
    if (!part.ok()) {
      ++refused;
      EXPECT_FALSE(part.status().message().empty());
      return;
    }
    auto other = eval::eval_report_from_json(seeds[1 - which]);
    std::vector<eval::EvalReport> parts =
        which == 0 ? std::vector<eval::EvalReport>{*part, *other} : std::vector<eval::EvalReport>{*other, *part};
    auto m2 = eval::merge_shard_reports(parts, {"a", "b"}, 2.0, std::nullopt);
    if (m2.ok()) {
      ++merged;
      EXPECT_EQ(m2->candidate.response_taus.size(), static_cast<size_t>(m2->candidate.responses));
      (void)eval::eval_result_json(*m2).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      ++refused;
      EXPECT_FALSE(m2.status().message().empty());
    }
  });
  expect_outcomes(plan, "shard reports", {{"merged", merged, 50}, {"refused", refused, 100}});
}

// A report past the stored bounds keeps its figures and says what it dropped.
TEST(HostResultFuzzTest, AHugeReportIsStoredBoundedAndSaysWhatWasDropped) {
  nlohmann::json r = result_seed();
  auto& responses = r["report"]["responses"];
  for (size_t i = 0; i < kMaxStoredResponses + 5; ++i) responses.push_back({{"line", i}, {"text", "x"}});
  ScriptedEnv env(
      [](const std::string&, const nlohmann::json&) -> Result<protocol::Frame> { return protocol::Frame(); });
  StageOutcome o = eval_outcome(r.dump(), false, false, env);
  ASSERT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  EXPECT_EQ(o.report["responses"].size(), kMaxStoredResponses);
  EXPECT_EQ(o.report["dropped"]["responses"], 6);
  // Past the byte bound the per-prompt parts go, the figures stay.
  r["report"]["responses"] = {{{"text", std::string(kMaxStoredReportBytes, 'y')}}};
  r["report"]["speedup"] = 2.5;
  o = eval_outcome(r.dump(), false, false, env);
  ASSERT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  EXPECT_FALSE(o.report.contains("responses"));
  EXPECT_EQ(o.report["speedup"], 2.5);
  EXPECT_EQ(o.report["dropped"]["responses"], "all");
}

// HostFileUpload against an agent whose every answer is mutated: the upload ends
// (done called once) with success or an error, within a bounded number of calls.
TEST(HostResultFuzzTest, AnUploadEndsOnMutatedRepliesWithAnAnswer) {
  testing::TempDir dir;
  const std::string local = dir.file("worker");
  testing::write_text(local, std::string(3 * 1000, 'w'));
  const std::vector<nlohmann::json> seeds = {
      {{"complete", false}, {"have", {{"0", "h0"}}}},
      {{"complete", true}},
      {{"ok", true}},
      {{"committed", false}, {"bad", {0}}, {"error", "chunk 0 differs"}},
      {{"committed", true}},
  };
  FuzzPlan plan = fuzz_plan(3000);
  int ok = 0, refused = 0;
  for_each_round(plan, "HostResultFuzzTest.upload", [&](Mutator& m, int) {
    ScriptedEnv env([&](const std::string& op, const nlohmann::json&) -> Result<protocol::Frame> {
      if (m.chance(3)) return data_loss("scripted failure of " + op);  // not transient: no retry timer
      protocol::Frame f;
      f.type = protocol::FrameType::kReply;
      const nlohmann::json& seed = op == "recv.begin"   ? seeds[m.below(2)]
                                   : op == "recv.write" ? seeds[2]
                                                        : seeds[3 + m.below(2)];
      auto parsed = header_json(wire_text(m.chance(60) ? m.mutate_json(seed) : seed));
      if (parsed.is_object()) f.header = std::move(parsed);
      return f;
    });
    int answers = 0;
    Status end;
    auto upload = std::make_shared<HostFileUpload>(env, HostFile{local, "h", "dest", 0644});
    upload->start([&](Status s, int64_t) {
      ++answers;
      end = s;
    });
    env.io().run();
    EXPECT_EQ(answers, 1);
    EXPECT_LT(env.calls, 100);
    end.ok() ? ++ok : ++refused;
  });
  expect_outcomes(plan, "uploads", {{"done", ok}, {"refused", refused}});
}

TEST(HostResultFuzzTest, MutatedListingsGroupIntoCheckpointsWithoutThrowing) {
  // An fs.scan answer's folders (agents/checkpoint_listing.h).
  const nlohmann::json seed = {
      {{"name", "checkpoint-100"},
       {"mtime_ns", 1},
       {"files",
        {{{"path", "config.json"}, {"size", 10}, {"mtime_ns", 2}},
         {{"path", "model.safetensors"}, {"size", 4096}, {"mtime_ns", 3}}}}},
      {{"name", "checkpoint-200"}, {"mtime_ns", 4}, {"files", {{{"path", "DONE"}, {"size", 0}, {"mtime_ns", 5}}}}}};
  FuzzPlan plan = fuzz_plan(4000);
  for_each_round(plan, "HostResultFuzzTest.checkpoints", [&](Mutator& m, int) {
    auto files = header_json(wire_text(m.mutate_json(seed)));
    if (files.is_discarded()) return;
    // Read as the watch reads a page: refused whole, naming the field, or taken.
    auto page = protocol::FsScanReply::from_json({{"folders", files}});
    if (!page.ok()) {
      EXPECT_EQ(page.status().message().rfind("the fs.scan reply's folders", 0), 0u) << page.status().message();
      return;
    }
    CheckpointScan scan(m.chance(50) ? "DONE" : "");
    for (int i = 0; i < 4; ++i) {
      for (const auto& c : scan.update(checkpoint_folders(page->folders, "checkpoint-*", "DONE"), 1000 * i)) {
        EXPECT_FALSE(c.name.empty());
      }
    }
  });
}

TEST(HostResultFuzzTest, MutatedHostsCheckReportsRenderWithoutThrowingOrControls) {
  const nlohmann::json seed = {
      {"hosts",
       {{{"name", "gpu"},
         {"transport", "ssh"},
         {"address", "198.18.0.2"},
         {"connected", true},
         {"agent", {{"version", "0.1"}}},
         {"info",
          {{"hostname", "gpu1"},
           {"cores", 8},
           {"mem_total_bytes", 1e10},
           {"mem_available_bytes", 5e9},
           {"disk_free_bytes", 1e11},
           {"workdir", "/w"},
           {"gpus", {{{"name", "H200"}, {"memory", "141 GiB"}}}}}},
         {"eval",
          {{"can_run", true},
           {"libtorch", "1.13"},
           {"cpu_flags", {"avx512f"}},
           {"bf16", true},
           {"cores", 8},
           {"cuda_devices", 1}}},
         {"eval_models", {{{"path", "m"}, {"bytes", 1e9}}}},
         {"slurm",
          {{"ok", true},
           {"partitions",
            {{{"name", "debug"},
              {"default", true},
              {"available", "up"},
              {"time_limit", "1:00:00"},
              {"nodes", 2},
              {"gres", "gpu:2"}}}},
           {"unknown_partitions", {{{"stage", "train"}, {"partition", "gpu-long"}}}}}}},
        {{"name", "b"}, {"transport", "local"}, {"address", ""}, {"connected", false}, {"error", "no"}}}},
      {"reach", {{{"from", "gpu"}, {"to", "b"}, {"reachable", false}, {"error", "refused"}}}}};
  FuzzPlan plan = fuzz_plan(4000);
  for_each_round(plan, "HostResultFuzzTest.hosts_check", [&](Mutator& m, int) {
    auto report = header_json(wire_text(m.mutate_json(seed)));
    if (report.is_discarded()) return;
    std::string text = render_hosts_check(report);
    for (char c : text) {
      EXPECT_TRUE(c == '\n' || c == '\t' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7F))
          << escape_controls(text);
    }
  });
}

// A Slurm host's `slurm.info` reply as `ferry hosts check` reads it (review-4 P9): a
// reply of any shape becomes a row and prints without a throw or a control byte.
TEST(HostResultFuzzTest, MutatedSlurmInfoRepliesBecomeARowNeverAThrow) {
  const nlohmann::json seed = {{"partitions",
                                {{{"name", "debug"},
                                  {"default", true},
                                  {"available", "up"},
                                  {"time_limit", "infinite"},
                                  {"nodes", 1},
                                  {"gres", "gpu:2"}},
                                 {{"name", "short"},
                                  {"default", false},
                                  {"available", "up"},
                                  {"time_limit", "1:00:00"},
                                  {"nodes", 1},
                                  {"gres", "(null)"}}}}};
  const std::vector<std::pair<std::string, std::string>> wanted = {{"train", "gpu-long"}, {"ok", "short"}};
  const std::vector<std::string> wires = {seed.dump(), R"({"partitions":[1,"x",{"name":7},{"name":"a\u001b[2J"}]})"};
  FuzzPlan plan = fuzz_plan(4000);
  int rows = 0, listed = 0;
  for_each_round(plan, "HostResultFuzzTest.slurm_info", [&](Mutator& m, int) {
    auto reply = header_json(m.chance(70) ? wire_text(m.mutate_json(seed)) : m.mutate_bytes(wires[m.below(2)], wires));
    if (reply.is_discarded()) return;
    nlohmann::json row = slurm_check_row(reply, wanted);
    ++rows;
    if (!row["partitions"].empty()) ++listed;
    nlohmann::json report = {
        {"hosts", {{{"name", "cluster"}, {"connected", true}, {"info", nlohmann::json::object()}, {"slurm", row}}}}};
    std::string text = render_hosts_check(report);
    for (char c : text) {
      EXPECT_TRUE(c == '\n' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7F)) << escape_controls(text);
    }
  });
  expect_outcomes(plan, "slurm.info replies", {{"rows", rows, 100}, {"with partitions", listed, 50}});
}

}  // namespace
}  // namespace ferry::fuzz
