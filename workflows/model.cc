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

const char* copy_route_name(CopyRoute route) {
  switch (route) {
    case CopyRoute::kAuto: return "auto";
    case CopyRoute::kDirect: return "direct";
    case CopyRoute::kRelay: return "relay";
  }
  return "?";
}

std::optional<CopyRoute> parse_copy_route(const std::string& name) {
  for (CopyRoute r : {CopyRoute::kAuto, CopyRoute::kDirect, CopyRoute::kRelay}) {
    if (name == copy_route_name(r)) return r;
  }
  return std::nullopt;
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
