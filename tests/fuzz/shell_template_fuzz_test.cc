// The run-script validator against the shells themselves (review-4 P2): random
// small scripts from a grammar of shell constructs with one ${{ params.x }} in them,
// rendered with a hostile value that would create a marker file if any shell ran
// it as code. For each script either the validator refuses it (unsafe_templates,
// workflows/shell_context.h) or neither `dash -c` nor `bash -c` creates the
// marker. The values are the review's (x;$(touch M)1, a[$(touch M)]) and the
// quote, backquote, backslash and newline forms each context is weak to.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_rounds.h"
#include "tests/fuzz/random_input.h"
#include "tests/support/process.h"
#include "workflows/shell_context.h"
#include "workflows/template.h"

namespace ferry::fuzz {
namespace {

const char* const kTemplate = "${{ params.x }}";

// A fragment that stands where a word or an expression may: the template, and
// the constructs around it, nested up to `depth` deep.
std::string expression(Mutator& m, int depth) {
  if (depth <= 0 || m.chance(25)) return kTemplate;
  std::string e = expression(m, depth - 1);
  static const std::vector<std::pair<const char*, const char*>> kAround = {
      {"a", ""},           {"", "b"},        {"\"", "\""},
      {"'", "'"},          {"$(echo ", ")"}, {"`echo ", "`"},
      {"$(( ", " + 1 ))"}, {"$((1+", "))"},  {"${v:-", "}"},
      {"${v:", "}"},       {"${a[", "]}"},   {"${#", "}"},
      {"\\", ""},          {"$", ""},        {"$'", "'"},
      {"\"$(( ", " ))\""}, {"$[", "]"},      {"\"$(echo ", ")\""},
      {"${v/", "/y}"},     {"${v:1:", "}"},  {"\"${v:-", "}\""},
      {"\"${a[", "]}\""},  {"$( (", ") )"},  {"$(printf %s ", ")"},
      {"x=", ""},
  };
  const auto& [before, after] = kAround[m.below(kAround.size())];
  return before + e + after;
}

// A command holding an expression, nested in compound commands up to `depth`.
std::string command(Mutator& m, int depth) {
  std::string e = expression(m, 1 + static_cast<int>(m.below(3)));
  if (depth > 0 && m.chance(30)) {
    std::string c = command(m, depth - 1);
    switch (m.below(6)) {
      case 0: return "if true; then\n" + c + "\nfi";
      case 1: return "{ " + c + "\n}";
      case 2: return "( " + c + "\n)";
      case 3: return "v=$(" + c + "\n)";
      case 4: return "case x in\nx) " + c + "\n;;\nesac";
      default: return "f() {\n" + c + "\n}\nf";
    }
  }
  switch (m.below(25)) {
    case 0: return "echo " + e;
    case 1: return "(( " + e + " ))";
    case 2: return "[[ " + e + " -eq 1 ]]";
    case 3: return "let v=" + e;
    case 4: return "declare -i v=" + e;
    case 5: return "a[" + e + "]=1";
    case 6: return "echo hi # " + e;
    case 7: return "cat <<EOF\n" + e + "\nEOF";
    case 8: return "cat <<'EOF'\n" + e + "\nEOF";
    case 9: return "for (( i = 0; i < " + e + "; i++ )); do break; done";
    case 10: return "x=" + e;
    case 11: return "case " + e + " in *) : ;; esac";
    case 12: return "[ " + e + " -eq 1 ]";
    case 13: return "local -i v=" + e;
    case 14: return "typeset -i v=" + e;
    case 15: return "printf '%s\\n' " + e;
    case 16: return "unset " + e;
    case 17: return "read -r " + e + " </dev/null";
    case 18: return "printf -v " + e + " x";
    case 19: return "[ -v " + e + " ]";
    case 20: return "declare " + e + "=1";
    case 21: return "export v=" + e + "; read -r l <<< " + e;
    case 22: return "declare -n r=" + e + "; echo $r";
    case 23: return "declare -i n\nn=" + e;
    default: return "test -n " + e + " && echo " + e;
  }
}

// Values that break out of each context where a single-quoted word is not safe.
std::vector<std::string> hostile_values(const std::string& mark) {
  const std::string touch = "touch " + mark;
  return {
      "x;$(" + touch + ")1",  "$(" + touch + ")1",   "a[$(" + touch + ")]", "x'$(" + touch + ")'",
      "x\";" + touch + ";\"", "x`" + touch + "`y",   ";" + touch + " #",    "x\n" + touch + "\n",
      "\\';" + touch + ";#",  "'; " + touch + "; '", "}$(" + touch + ")",   "]$(" + touch + ")",
  };
}

TEST(ShellTemplateFuzzTest, EveryScriptTheValidatorAllowsRunsNoValueUnderDashOrBash) {
  if (std::system("command -v dash >/dev/null 2>&1 && command -v bash >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs dash and bash";
  }
  testing::TempDir dir;
  const std::string mark = dir.file("M");
  const auto values = hostile_values(mark);
  // Fixed seed (FuzzPlan); each allowed round starts two shells, so a default run
  // stays well under a minute, also under the sanitizers.
  FuzzPlan plan = fuzz_plan(1200);
  int refused = 0, allowed = 0;
  for_each_round(plan, "shell templates", [&](Mutator& m, int) {
    std::string script = command(m, 2);
    if (m.chance(50)) script = "v=3; a=(1 2)\n" + script;
    if (m.chance(30)) script += "\necho done";
    const std::string& value = values[m.below(values.size())];
    auto rendered = workflow::expand_template(
        script, [&](const workflow::Reference&) -> Result<std::string> { return value; }, true);
    ASSERT_TRUE(rendered.ok()) << rendered.status().message();
    if (!workflow::unsafe_templates(script).empty()) {
      ++refused;
      return;
    }
    ++allowed;
    for (const char* shell : {"dash", "bash"}) {
      ::unlink(mark.c_str());
      testing::run_process({"timeout", "5", shell, "-c", "cd " + dir.path() + " && " + *rendered}, {}, 10);
      EXPECT_FALSE(testing::exists(mark)) << shell << " ran the value " << value << "\nscript (allowed):\n"
                                          << script << "\nrendered:\n"
                                          << *rendered;
    }
  });
  expect_outcomes(plan, "scripts", {{"refused", refused, 100}, {"allowed and run", allowed, 100}});
}

}  // namespace
}  // namespace ferry::fuzz
