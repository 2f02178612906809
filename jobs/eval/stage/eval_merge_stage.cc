#include "jobs/eval/stage/eval_merge_stage.h"

#include <boost/asio/post.hpp>

#include "jobs/eval/run/eval_report_json.h"
#include "jobs/eval/run/shard_merge.h"
#include "jobs/eval/stage/eval_outcome.h"

namespace ferry {
namespace {

std::string error_result(const std::string& why) { return nlohmann::json{{"ok", false}, {"error", why}}.dump(); }

}  // namespace

EvalMergeStage::EvalMergeStage(StageEnv& env, std::vector<std::string> shards, std::optional<double> min_tau,
                               std::optional<double> min_ratio_to_reference)
    : env_(env),
      shards_(std::move(shards)),
      min_tau_(min_tau),
      min_ratio_(min_ratio_to_reference) {}

std::string EvalMergeStage::merged_result() {
  // The reports are the hosts' word, read bounded and typed; whatever still throws
  // (an allocation) fails the merge rather than the coordinator.
  try {
    return merge_recorded();
  } catch (const std::exception& e) {
    return error_result(std::string("merging the shards: ") + e.what());
  }
}

std::string EvalMergeStage::merge_recorded() {
  std::vector<eval::EvalReport> parts;
  for (const auto& stage : shards_) {
    nlohmann::json j = env_.stage_report(stage);
    if (j.is_null()) return error_result("shard stage '" + stage + "' recorded no eval report");
    auto part = eval::eval_report_from_json(j);
    if (!part.ok()) return error_result("shard stage '" + stage + "': " + part.status().message());
    parts.push_back(std::move(*part));
  }
  auto merged = eval::merge_shard_reports(parts, shards_, min_tau_, min_ratio_);
  if (!merged.ok()) return error_result("merging the shards: " + merged.status().message());
  return eval::eval_result_json(*merged).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void EvalMergeStage::start(std::function<void(StageOutcome)> done) {
  StageOutcome o = eval_outcome(merged_result(), /*cancelled=*/false, /*append_text=*/true, env_);
  boost::asio::post(env_.io(), [done = std::move(done), o = std::move(o)] { done(o); });
}

}  // namespace ferry
