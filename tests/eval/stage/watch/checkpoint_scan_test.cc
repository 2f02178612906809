// The completion rule of watched checkpoints (jobs/eval/stage/watch/checkpoint_scan.h) on
// listings shaped as the agent's fs.scan answers them.
#include "jobs/eval/stage/watch/checkpoint_scan.h"

#include <gtest/gtest.h>

#include "jobs/eval/stage/watch/checkpoint_watch_stage.h"

namespace ferry {
namespace {

using nlohmann::json;

json file(const std::string& path, int64_t size, int64_t mtime = 1) {
  return {{"path", path}, {"size", size}, {"mtime_ns", mtime}};
}
json folder(const std::string& name, json files) { return {{"name", name}, {"mtime_ns", 1}, {"files", files}}; }

// A listing's folders as the watch takes them: read through FsScanReply.
std::vector<protocol::ScannedFolder> read_folders(const json& l) {
  auto r = protocol::FsScanReply::from_json({{"folders", l}});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->folders : std::vector<protocol::ScannedFolder>{};
}

std::vector<std::string> names(const std::vector<CheckpointFolder>& v) {
  std::vector<std::string> out;
  for (const auto& c : v) out.push_back(c.name);
  return out;
}

// `polls` listings of `l`, kStableMs / (polls - 1) apart from `t`; the last's answer.
std::vector<CheckpointFolder> listings(CheckpointScan& scan, const json& l, int polls, int64_t* t,
                                       const std::string& pattern = "checkpoint-*", const std::string& marker = "") {
  std::vector<CheckpointFolder> done;
  for (int i = 0; i < polls; ++i) {
    done = scan.update(checkpoint_folders(read_folders(l), pattern, marker), *t);
    *t += kStableMs / (kStablePolls - 1);
  }
  return done;
}

TEST(CheckpointScanTest, ACheckpointCountsOnceItsWeightsAreThereAndItsFilesStopChanging) {
  CheckpointScan scan("");
  int64_t t = 1000;
  json growing = {folder("checkpoint-20", {file("config.json", 10), file("model.safetensors", 100)}),
                  folder("checkpoint-100", {file("config.json", 10), file("model.safetensors", 50)}),
                  folder("checkpoint-3", {file("config.json", 10)}), folder("checkpoint-4", json::array())};
  EXPECT_TRUE(listings(scan, growing, kStablePolls - 1, &t).empty()) << "fewer listings prove nothing";
  growing[1]["files"][1] = file("model.safetensors", 80);  // still being written
  auto done = listings(scan, growing, 1, &t);
  EXPECT_EQ(names(done), std::vector<std::string>{"checkpoint-20"});
  EXPECT_EQ(scan.incomplete(), (std::vector<std::string>{"checkpoint-3", "checkpoint-4", "checkpoint-100"}));
  done = listings(scan, growing, kStablePolls, &t);
  EXPECT_EQ(names(done), (std::vector<std::string>{"checkpoint-20", "checkpoint-100"})) << "in step order";
  EXPECT_EQ(done[1].step, 100);
  EXPECT_EQ(scan.incomplete(), (std::vector<std::string>{"checkpoint-3", "checkpoint-4"})) << "no weights";
}

// Checkpoints of one model have equal sizes: a writer that rewrites a file in place
// (or stalls between two polls) changes only its mtime.
TEST(CheckpointScanTest, AnMtimeChangeOrPollsTooCloseTogetherAreNotStable) {
  CheckpointScan scan("");
  json l = {folder("checkpoint-1", {file("config.json", 1, 10), file("model.safetensors", 9, 10)})};
  int64_t t = 0;
  for (int i = 0; i < 10; ++i)
    EXPECT_TRUE(scan.update(checkpoint_folders(read_folders(l), "checkpoint-*", ""), t + i).empty());
  t = kStableMs - 1;
  EXPECT_TRUE(scan.update(checkpoint_folders(read_folders(l), "checkpoint-*", ""), t).empty()) << "short of the span";
  t += kStableMs;
  l[0]["files"][1] = file("model.safetensors", 9, 11);
  EXPECT_TRUE(scan.update(checkpoint_folders(read_folders(l), "checkpoint-*", ""), t).empty()) << "mtime moved";
  EXPECT_EQ(names(listings(scan, l, kStablePolls, &t)), std::vector<std::string>{"checkpoint-1"});
}

TEST(CheckpointScanTest, ShardedCheckpointNeedsItsIndex) {
  CheckpointScan scan("");
  int64_t t = 0;
  json shards = {folder("ckpt-5", {file("config.json", 1), file("sub/model.safetensors", 9)})};
  EXPECT_TRUE(listings(scan, shards, kStablePolls + 1, &t, "ckpt-*").empty()) << "weights in a subfolder do not count";
  shards[0]["files"].push_back(file("model.safetensors.index.json", 3));
  EXPECT_EQ(names(listings(scan, shards, kStablePolls, &t, "ckpt-*")), std::vector<std::string>{"ckpt-5"});
}

TEST(CheckpointScanTest, WithAMarkerOnlyTheMarkerDecides) {
  CheckpointScan scan("DONE");
  int64_t t = 0;
  json l = {folder("checkpoint-1", {file("config.json", 1), file("model.safetensors", 2)}),
            folder("checkpoint-2", {file("DONE", 0)})};
  EXPECT_EQ(names(listings(scan, l, 1, &t, "checkpoint-*", "DONE")), std::vector<std::string>{"checkpoint-2"})
      << "a marker is enough at once, weights without it are not";
}

TEST(CheckpointScanTest, NamesThatAreNotOneMatchingComponentAreLeftOut) {
  json l = {folder("..", json::array()), folder("checkpoint-1/../../etc", json::array()),
            folder("other-2", json::array()), folder("checkpoint-4 (copy)", {file("config.json", 1)})};
  auto c = checkpoint_folders(read_folders(l), "*", "");
  EXPECT_EQ(names(c), (std::vector<std::string>{"other-2", "checkpoint-4 (copy)"}));
  EXPECT_EQ(checkpoint_folders(read_folders(l), "checkpoint-*", "").size(), 1u);
}

// A host's reply is not trusted: one of the wrong shape is refused whole, naming the field.
TEST(CheckpointScanTest, ListingsOfTheWrongShapeAreRefusedByName) {
  const std::pair<json, std::string> bad[] = {
      {json::array({json{{"name", 5}}}), "the fs.scan reply's folders[0].name is a number, not a string"},
      {json::array({json("checkpoint-3")}), "the fs.scan reply's folders[0] is a string, not an object"},
      {json::array({folder("checkpoint-4", {json{{"path", 7}}})}),
       "the fs.scan reply's folders[0].files[0].path is a number, not a string"},
  };
  for (const auto& [folders, message] : bad) {
    auto r = protocol::FsScanReply::from_json({{"folders", folders}});
    ASSERT_FALSE(r.ok()) << folders.dump();
    EXPECT_EQ(r.status().message(), message);
  }
}

TEST(CheckpointScanTest, StepIsTheNumberEndingTheName) {
  EXPECT_EQ(step_of("checkpoint-1500"), 1500);
  EXPECT_EQ(step_of("step_7"), 7);
  EXPECT_EQ(step_of("final"), std::nullopt);
  EXPECT_EQ(step_of("checkpoint-1234567890123456789"), std::nullopt) << "too long to be a step";
}

TEST(CheckpointScanTest, AnOddOrLongNameBecomesAHashInJobKeys) {
  EXPECT_EQ(checkpoint_key("checkpoint-500"), "checkpoint-500");
  const std::string odd = checkpoint_key("checkpoint-500 (copy)");
  EXPECT_EQ(odd.rfind("ck-", 0), 0u);
  EXPECT_EQ(odd.size(), 19u);
  EXPECT_NE(odd, checkpoint_key("checkpoint-500 (copy 2)"));
  EXPECT_EQ(checkpoint_key(std::string(65, 'a')).rfind("ck-", 0), 0u) << "too long";
  EXPECT_EQ(checkpoint_key(".hidden").rfind("ck-", 0), 0u);
}

}  // namespace
}  // namespace ferry
