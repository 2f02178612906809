#include "jobs/eval/run/eval_report_json.h"

#include "base/peer_json.h"
#include "jobs/eval/run/json_fields.h"
#include "jobs/eval/run/report_fields.h"

namespace ferry::eval {

Result<EvalReport> eval_report_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("the eval report is " + json_type_phrase(j) + ", not an object");
  EvalReport rep;
  std::string error;
  JsonFields r(j, "", &error);
  eval_report_fields(r, rep);
  if (!error.empty()) return invalid_argument("the eval report's " + error);
  return rep;
}

}  // namespace ferry::eval
