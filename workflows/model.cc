#include "workflows/model.h"

namespace ferry::workflow {

const char* stage_kind_name(StageKind kind) {
  switch (kind) {
    case StageKind::kCommand: return "command";
    case StageKind::kCopy: return "copy";
    case StageKind::kEval: return "eval";
  }
  return "?";
}

const Host* Workflow::find_host(const std::string& n) const {
  for (const auto& h : hosts) {
    if (h.name == n) return &h;
  }
  return nullptr;
}

const Stage* Workflow::find_stage(const std::string& n) const {
  for (const auto& s : stages) {
    if (s.name == n) return &s;
  }
  return nullptr;
}

const Param* Workflow::find_param(const std::string& n) const {
  for (const auto& p : params) {
    if (p.name == n) return &p;
  }
  return nullptr;
}

}  // namespace ferry::workflow
