// The completion rule of watched checkpoints (jobs/watch/checkpoint_scan.h) on
// listings shaped as the agent's fs.list answers them.
#include "jobs/watch/checkpoint_scan.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

using nlohmann::json;

json file(const std::string& path, int64_t size) { return {{"path", path}, {"size", size}}; }

std::vector<std::string> names(const std::vector<CheckpointFolder>& v) {
  std::vector<std::string> out;
  for (const auto& c : v) out.push_back(c.name);
  return out;
}

TEST(CheckpointScanTest, ACheckpointCountsOnceItsWeightsAreThereAndItsFilesStopChanging) {
  CheckpointScan scan("");
  json growing = {file("checkpoint-20/config.json", 10), file("checkpoint-20/model.safetensors", 100),
                  file("checkpoint-100/config.json", 10), file("checkpoint-100/model.safetensors", 50),
                  file("checkpoint-3/config.json", 10), file("notes.txt", 5), file("other-7/config.json", 1)};
  EXPECT_TRUE(scan.update(checkpoint_folders(growing, "checkpoint-*", "")).empty()) << "one listing proves nothing";
  growing[3] = file("checkpoint-100/model.safetensors", 80);  // still being written
  auto done = scan.update(checkpoint_folders(growing, "checkpoint-*", ""));
  EXPECT_EQ(names(done), std::vector<std::string>{"checkpoint-20"});
  EXPECT_EQ(scan.incomplete(), (std::vector<std::string>{"checkpoint-3", "checkpoint-100"}));
  done = scan.update(checkpoint_folders(growing, "checkpoint-*", ""));
  EXPECT_EQ(names(done), (std::vector<std::string>{"checkpoint-20", "checkpoint-100"})) << "in step order";
  EXPECT_EQ(done[1].step, 100);
  EXPECT_EQ(scan.incomplete(), std::vector<std::string>{"checkpoint-3"}) << "no weights: never complete";
}

TEST(CheckpointScanTest, ShardedCheckpointNeedsItsIndex) {
  CheckpointScan scan("");
  json shards = {file("ckpt-5/config.json", 1), file("ckpt-5/sub/model.safetensors", 9)};
  scan.update(checkpoint_folders(shards, "ckpt-*", ""));
  EXPECT_TRUE(scan.update(checkpoint_folders(shards, "ckpt-*", "")).empty()) << "weights in a subfolder do not count";
  shards.push_back(file("ckpt-5/model.safetensors.index.json", 3));
  scan.update(checkpoint_folders(shards, "ckpt-*", ""));
  EXPECT_EQ(names(scan.update(checkpoint_folders(shards, "ckpt-*", ""))), std::vector<std::string>{"ckpt-5"});
}

TEST(CheckpointScanTest, WithAMarkerOnlyTheMarkerDecides) {
  CheckpointScan scan("DONE");
  json l = {file("checkpoint-1/config.json", 1), file("checkpoint-1/model.safetensors", 2),
            file("checkpoint-2/DONE", 0)};
  EXPECT_EQ(names(scan.update(checkpoint_folders(l, "checkpoint-*", "DONE"))), std::vector<std::string>{"checkpoint-2"})
      << "a marker is enough at once, weights without it are not";
}

TEST(CheckpointScanTest, StepIsTheNumberEndingTheName) {
  EXPECT_EQ(step_of("checkpoint-1500"), 1500);
  EXPECT_EQ(step_of("step_7"), 7);
  EXPECT_EQ(step_of("final"), std::nullopt);
  EXPECT_EQ(step_of("checkpoint-1234567890123456789"), std::nullopt) << "too long to be a step";
}

}  // namespace
}  // namespace ferry
