#include "jobs/eval/run/eval_report_json.h"

#include "base/json_fields.h"
#include "jobs/eval/run/report_fields.h"

namespace ferry::eval {

Result<EvalReport> eval_report_from_json(const nlohmann::json& j) {
  return fields_from_json<EvalReport>(j, "the eval report", eval_report_fields);
}

Result<DrafterDiff> drafter_diff_from_json(const nlohmann::json& j) {
  return fields_from_json<DrafterDiff>(j, "the drafter diff", drafter_diff_fields);
}

}  // namespace ferry::eval
