#include "workflows/model.h"

#include "base/enum_names.h"

namespace ferry::workflow {

namespace {

constexpr EnumName<StageKind> kStageKindNames[] = {
    {StageKind::kCommand, "command"}, {StageKind::kCopy, "copy"}, {StageKind::kEval, "eval"}};

constexpr EnumName<Transport> kTransportNames[] = {{Transport::kLocal, "local"}, {Transport::kSsh, "ssh"}};

constexpr EnumName<CopyRoute> kCopyRouteNames[] = {
    {CopyRoute::kAuto, "auto"}, {CopyRoute::kDirect, "direct"}, {CopyRoute::kRelay, "relay"}};

}  // namespace

const char* transport_name(Transport transport) { return enum_name(kTransportNames, transport); }

std::optional<Transport> parse_transport(const std::string& name) { return enum_from_name(kTransportNames, name); }

std::vector<std::string> transport_names() {
  std::vector<std::string> names;
  for (const EnumName<Transport>& e : kTransportNames) names.emplace_back(e.name);
  return names;
}

const char* stage_kind_name(StageKind kind) { return enum_name(kStageKindNames, kind); }

const char* copy_route_name(CopyRoute route) { return enum_name(kCopyRouteNames, route); }

std::optional<CopyRoute> parse_copy_route(const std::string& name) { return enum_from_name(kCopyRouteNames, name); }

std::string Workflow::shell_of(const Stage& stage) const {
  if (!stage.shell.empty()) return stage.shell;
  const Host* host = find_host(stage.host);
  if (host && !host->shell.empty()) return host->shell;
  return shell;
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
