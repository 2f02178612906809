// `ferry tokenize`: shows what an eval feeds the model for a text.
//   ferry tokenize --model DIR [--chat|--chat-no-think] [--json] [TEXT | -]
// DIR holds tokenizer.json (or is the file itself). TEXT, or stdin when it is "-" or
// absent, goes through the chat format when asked (as one user turn), then the
// tokenizer. Prints one line per token (id, vocabulary piece, the text it stands for),
// or with --json {"text", "ids", "pieces"}. Exit codes: 0 ok, 2 usage or bad input.
// Torch-free: ferry runs it without loading the eval plugin.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace ferry::tokenizer {

int tokenize_command_main(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                          std::ostream& err);

}  // namespace ferry::tokenizer
