#include "workflows/dag.h"

#include <functional>
#include <map>

namespace ferry::workflow {

std::vector<std::string> find_cycle(const Workflow& wf) {
  enum Color { kWhite, kGrey, kBlack };
  std::map<std::string, Color> color;
  std::vector<std::string> stack;
  std::vector<std::string> cycle;
  std::function<bool(const Stage&)> visit = [&](const Stage& s) {
    color[s.name] = kGrey;
    stack.push_back(s.name);
    for (const auto& need : s.needs) {
      const Stage* n = wf.find_stage(need);
      if (!n || need == s.name) continue;  // a self-need is reported as such by validation
      if (color[need] == kGrey) {
        auto it = std::find(stack.begin(), stack.end(), need);
        cycle.assign(it, stack.end());
        cycle.push_back(need);
        return true;
      }
      if (color[need] == kWhite && visit(*n)) return true;
    }
    stack.pop_back();
    color[s.name] = kBlack;
    return false;
  };
  for (const auto& s : wf.stages) {
    if (color[s.name] == kWhite && visit(s)) {
      // Report the cycle in "needs" order reversed: a needs b needs a → a → b → a.
      return cycle;
    }
  }
  return {};
}

std::set<std::string> ancestors(const Workflow& wf, const std::string& stage) {
  std::set<std::string> out;
  std::vector<std::string> todo = {stage};
  while (!todo.empty()) {
    std::string cur = todo.back();
    todo.pop_back();
    const Stage* s = wf.find_stage(cur);
    if (!s) continue;
    for (const auto& n : s->needs) {
      if (out.insert(n).second) todo.push_back(n);
    }
  }
  return out;
}

std::vector<std::string> topological_order(const Workflow& wf) {
  std::vector<std::string> order;
  std::set<std::string> done;
  bool progress = true;
  while (progress && order.size() < wf.stages.size()) {
    progress = false;
    for (const auto& s : wf.stages) {
      if (done.count(s.name)) continue;
      bool ready = true;
      for (const auto& n : s.needs) {
        if (wf.find_stage(n) && !done.count(n)) ready = false;
      }
      if (ready) {
        order.push_back(s.name);
        done.insert(s.name);
        progress = true;
      }
    }
  }
  return order;
}

std::vector<std::string> stage_output_names(const Stage& stage) {
  std::vector<std::string> names;
  for (const auto& o : stage.outputs) names.push_back(o.name);
  if (stage.kind == StageKind::kCopy) {
    for (const char* n : {"path", "manifest_hash", "bytes"}) names.push_back(n);
  } else if (stage.kind == StageKind::kEval) {
    for (const char* n : {"tau", "reference_tau", "speedup"}) names.push_back(n);
  }
  return names;
}

}  // namespace ferry::workflow
