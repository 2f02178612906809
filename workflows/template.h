// ${{ }} templates: parsing the references in a string and expanding them.
//
// Grammar: "${{" spaces? EXPR spaces? "}}" where EXPR is one of
//   params.NAME | stages.NAME.outputs.KEY | hosts.NAME.workdir | hosts.NAME.address
//   | run.id | "int(" EXPR ")"
// Values that reach a shell (a stage's `run`) are single-quoted so each stays one
// word whatever it holds: quotes, $(), ;, newlines. An int(EXPR) value must be an
// integer (-?[0-9]+, at most kMaxIntDigits digits) or the expansion fails; it is
// written bare, so it may stand in shell arithmetic. Plain functions; any thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/shell_quote.h"
#include "base/status.h"

namespace ferry::workflow {

struct Reference {
  enum class Kind { kParam, kStageOutput, kHost, kRun };
  Kind kind = Kind::kParam;
  std::string name;      // param, stage, host name; "id" for run
  std::string field;     // output key, host field
  size_t offset = 0;     // where "${{" starts in the string
  std::string text;      // the expression as written
  bool integer = false;  // int(EXPR): the value must be an integer
};

/// The longest int() value, in digits: 19 fit a signed 64-bit shell integer.
constexpr size_t kMaxIntDigits = 19;

/// All references in `s`, or an error naming the bad one (unterminated, unknown form).
Result<std::vector<Reference>> parse_references(const std::string& s);

using Resolver = std::function<Result<std::string>(const Reference&)>;

/// Replaces each reference with resolve(ref); shell-quotes the values when asked.
Result<std::string> expand_template(const std::string& s, const Resolver& resolve, bool shell_quote);

using ferry::shell_quote;  // base/shell_quote.h: one quoting rule for every command line

}  // namespace ferry::workflow
