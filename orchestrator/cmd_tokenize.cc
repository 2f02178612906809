// `ferry tokenize`: the model's tokenizer on a text (jobs/tokenizer; no eval plugin).
#include <iostream>

#include "jobs/tokenizer/tokenize_command.h"
#include "orchestrator/cli.h"

namespace ferry::cli {

int cmd_tokenize(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return tokenizer::tokenize_command_main(args, std::cin, std::cout, std::cerr);
}

}  // namespace ferry::cli
