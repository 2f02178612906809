// Templates inside quotes or an expanding here-document (review F7): the scanner
// against commands whose contexts were checked by hand, and `validate` reporting
// each at its line and column. (Why they are unsafe, confirmed with /bin/sh: a
// value `$(cmd)` inside "…" runs cmd; `x; cmd; #` inside '…' runs cmd.)
#include "workflows/shell_context.h"

#include <gtest/gtest.h>

#include "workflows/parser.h"

namespace ferry::workflow {
namespace {

std::vector<std::string> wheres(const std::string& cmd) {
  std::vector<std::string> w;
  for (const auto& u : unsafe_templates(cmd)) w.push_back(u.where + "@" + std::to_string(u.offset));
  return w;
}

TEST(ShellContextTest, BareWordsAreSafe) {
  EXPECT_TRUE(wheres("echo ${{ params.x }} > out; cp ${{ params.a }} ${{ params.b }}").empty());
  EXPECT_TRUE(wheres("echo \"$(cat ${{ params.f }})\"").empty()) << "inside $( ) inside quotes is a word again";
  EXPECT_TRUE(wheres("echo it\\'s ${{ params.x }}").empty()) << "an escaped quote opens nothing";
  EXPECT_TRUE(wheres("# say \"${{ params.x }}\" here\necho ok").empty()) << "a comment";
  EXPECT_TRUE(wheres("cat <<'EOF'\n${{ params.x }}\nEOF\n").empty()) << "a quoted here-document does not expand";
}

TEST(ShellContextTest, QuotesAndExpandingHereDocumentsAreFound) {
  EXPECT_EQ(wheres("echo \"${{ params.x }}\""), std::vector<std::string>{"double quotes@6"});
  EXPECT_EQ(wheres("echo '${{ params.x }}'"), std::vector<std::string>{"single quotes@6"});
  EXPECT_EQ(wheres("echo \"a $b ${{ params.x }} c\""), std::vector<std::string>{"double quotes@11"});
  EXPECT_EQ(wheres("cat <<EOF > f\nhi ${{ params.x }}\nEOF\necho ${{ params.y }}"),
            std::vector<std::string>{"a here-document@17"});
  EXPECT_EQ(wheres("cat <<-END\n\t${{ params.x }}\n\tEND\n"), std::vector<std::string>{"a here-document@12"});
}

TEST(ShellContextTest, ValidateRefusesATemplateInsideQuotesAtItsPlace) {
  Diagnostics d("wf.yaml");
  parse_workflow_collecting("wf.yaml",
                            "name: q\nparams:\n  x: a\nstages:\n  s:\n    run: |\n      echo ok\n"
                            "      echo \"${{ params.x }}\"\n",
                            &d);
  std::string text = d.to_string();
  EXPECT_NE(text.find("wf.yaml:8:13: stage 's' run: ${{ params.x }} stands inside double quotes"), std::string::npos)
      << text;
  Diagnostics bare("wf.yaml");
  parse_workflow_collecting("wf.yaml", "name: q\nparams:\n  x: a\nstages:\n  s:\n    run: echo ${{ params.x }}\n",
                            &bare);
  EXPECT_TRUE(bare.empty()) << bare.to_string();
}

}  // namespace
}  // namespace ferry::workflow
