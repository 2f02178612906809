// `ferry schema`: workflows/workflow.schema.json, built in (schema_text.cc is written
// from it by CMake, so the file and the command never differ).
#include <iostream>

#include "orchestrator/cli.h"

namespace ferry::cli {

extern const char kWorkflowSchema[];

int cmd_schema() {
  std::cout << kWorkflowSchema;
  return kExitOk;
}

}  // namespace ferry::cli
