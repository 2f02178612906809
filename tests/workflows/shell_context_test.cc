// Templates inside quotes or an expanding here-document (review F7): the scanner
// against commands whose contexts were checked by hand, and `validate` reporting
// each at its line and column. (Why they are unsafe, confirmed with /bin/sh: a
// value `$(cmd)` inside "…" runs cmd; `x; cmd; #` inside '…' runs cmd.)
#include "workflows/shell_context.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/support/process.h"
#include "workflows/template.h"

#include "workflows/parser.h"

namespace ferry::workflow {
namespace {

std::vector<std::string> wheres(const std::string& cmd) {
  std::vector<std::string> w;
  for (const auto& u : unsafe_templates(cmd)) w.push_back(u.where + "@" + std::to_string(u.offset));
  return w;
}

// What parsing `yaml` as wf.yaml reports, a line a diagnostic; empty when nothing.
std::string diagnostics(const std::string& yaml) {
  Diagnostics d("wf.yaml");
  parse_workflow_collecting("wf.yaml", yaml, &d);
  return d.to_string();
}

TEST(ShellContextTest, BareWordsAreSafe) {
  EXPECT_TRUE(wheres("echo ${{ params.x }} > out; cp ${{ params.a }} ${{ params.b }}").empty());
  EXPECT_TRUE(wheres("echo \"$(cat ${{ params.f }})\"").empty()) << "inside $( ) inside quotes is a word again";
  EXPECT_TRUE(wheres("echo it\\'s ${{ params.x }}").empty()) << "an escaped quote opens nothing";
  EXPECT_TRUE(wheres("echo a#${{ params.x }}").empty()) << "a # inside a word starts no comment";
  EXPECT_TRUE(wheres("echo '`' ${{ params.x }} \\`").empty()) << "quoted and escaped backquotes open nothing";
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

// Review N5: inside `…` a value's backquote ends the substitution early; in a #
// comment a value's newline ends the comment.
TEST(ShellContextTest, TemplatesInBackquotesAndCommentsAreRefused) {
  EXPECT_EQ(wheres("echo `echo ${{ params.x }}`"), std::vector<std::string>{"backquotes@11"});
  EXPECT_EQ(wheres("echo \"`cat ${{ params.x }}`\""), std::vector<std::string>{"backquotes@11"});
  EXPECT_EQ(wheres("echo hi # ${{ params.note }}"), std::vector<std::string>{"a comment@10"});
  EXPECT_EQ(wheres("echo hi;# ${{ params.note }}\necho ${{ params.y }}"), std::vector<std::string>{"a comment@10"});
  EXPECT_EQ(wheres("# say \"${{ params.x }}\" here\necho ok"), std::vector<std::string>{"a comment@7"});
  EXPECT_TRUE(wheres("echo $(echo ${{ params.x }}) `date` ${{ params.y }}").empty()) << "$( ) and after `…`";

  std::string text = diagnostics(
      "name: q\nparams:\n  x: a\nstages:\n  s:\n    run: |\n      echo `echo ${{ params.x }}`\n"
      "      echo hi # ${{ params.x }}\n");
  EXPECT_NE(text.find("wf.yaml:7:18: stage 's' run: ${{ params.x }} stands inside backquotes"), std::string::npos)
      << text;
  EXPECT_NE(text.find("wf.yaml:8:17: stage 's' run: ${{ params.x }} stands inside a comment"), std::string::npos)
      << text;
}

// The shells themselves, with the value of the review's trial: quoted by ferry, it
// runs nothing as a bare word, and the backquoted form the validator refuses does
// run it under `bash --posix` (RHEL's /bin/sh). So is the comment form under sh.
TEST(ShellContextTest, AHostileValueRunsNoCommandWhereTheValidatorAllowsIt) {
  if (std::system("command -v bash >/dev/null 2>&1") != 0) GTEST_SKIP() << "no bash here";
  testing::TempDir dir;
  const std::string mark = dir.file("ran");
  auto render = [&](const std::string& run, const std::string& value) {
    auto r = expand_template(run, [&](const Reference&) -> Result<std::string> { return value; }, true);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : std::string();
  };
  auto ran = [&](const std::vector<std::string>& shell, const std::string& cmd) {
    ::unlink(mark.c_str());
    std::vector<std::string> argv = shell;
    argv.push_back(cmd);
    testing::run_process(argv, {}, 30);
    return testing::exists(mark);
  };
  // The review's values; the temp path has no blanks or quotes to quote.
  const std::string tick = "a`;touch " + mark + ";`b";
  const std::string line = "x\ntouch " + mark + " #";
  const std::vector<std::string> posix = {"bash", "--posix", "-c"}, sh = {"/bin/sh", "-c"};

  const std::string bare = "echo $(echo ${{ params.x }}) ${{ params.x }}";
  ASSERT_TRUE(wheres(bare).empty());
  EXPECT_FALSE(ran(posix, render(bare, tick)));
  EXPECT_FALSE(ran(posix, render(bare, line)));
  EXPECT_FALSE(ran(sh, render(bare, line)));

  const std::string backquoted = "echo `echo ${{ params.x }}`";
  ASSERT_FALSE(wheres(backquoted).empty());
  EXPECT_TRUE(ran(posix, render(backquoted, tick))) << "why backquotes are refused";
  const std::string comment = "echo hi # ${{ params.x }}";
  ASSERT_FALSE(wheres(comment).empty());
  EXPECT_TRUE(ran(sh, render(comment, line))) << "why comments are refused";
  // Review-4 P2: in arithmetic the quotes are dropped and $( ) runs, under sh and
  // bash alike; after a backslash the rendered quote is text.
  const std::string number = "$(touch " + mark + ")1";
  const std::string arith = "echo $(( ${{ params.x }} / 2 ))";
  ASSERT_FALSE(wheres(arith).empty());
  EXPECT_TRUE(ran(sh, render(arith, number))) << "why arithmetic is refused";
  EXPECT_TRUE(ran(posix, render(arith, number))) << "why arithmetic is refused";
  const std::string escaped = "echo \\${{ params.x }}";
  ASSERT_FALSE(wheres(escaped).empty());
  EXPECT_TRUE(ran(sh, render(escaped, "x;touch " + mark + " #"))) << "why a backslash before ${{ is refused";
}

// Review-4 P2: the shell drops the quotes inside arithmetic and bash evaluates a
// value's own a[$(cmd)]; `\` or `$` before ${{ spoils the rendered quote. Each form
// is refused at the ${{ (offsets counted by hand).
TEST(ShellContextTest, TemplatesInArithmeticAreRefused) {
  using V = std::vector<std::string>;
  EXPECT_EQ(wheres("echo $(( ${{ params.n }} / 2 ))"), V{"arithmetic@9"});
  EXPECT_EQ(wheres("echo \"half $(( ${{ params.n }} / 2 ))\""), V{"arithmetic@15"});
  EXPECT_EQ(wheres("(( ${{ params.n }} > 2 )) && echo big"), V{"arithmetic@3"});
  EXPECT_EQ(wheres("if (( x + ${{ params.n }} )); then :; fi"), V{"arithmetic@10"});
  EXPECT_EQ(wheres("for (( i = 0; i < ${{ params.n }}; i++ )); do :; done"), V{"arithmetic@18"});
  EXPECT_EQ(wheres("echo $[ ${{ params.n }} + 1 ]"), V{"arithmetic@8"});
  EXPECT_EQ(wheres("[[ ${{ params.n }} -eq 1 ]] && echo one"), V{"[[ ]]@3"});
  EXPECT_EQ(wheres("x=1; [[ $x -eq ${{ params.n }} ]]"), V{"[[ ]]@15"});
  EXPECT_EQ(wheres("let n=${{ params.n }}+1"), V{"the arguments of let or declare -i@6"});
  EXPECT_EQ(wheres("declare -i n=${{ params.n }}"), V{"the arguments of let or declare -i@13"});
  EXPECT_EQ(wheres("f() { local -ri n=${{ params.n }}; }"), V{"the arguments of let or declare -i@18"});
  EXPECT_EQ(wheres("typeset -i n=${{ params.n }}"), V{"the arguments of let or declare -i@13"});
  EXPECT_EQ(wheres("echo ${v:${{ params.n }}}"), V{"a ${…} expansion@9"});
  EXPECT_EQ(wheres("echo \"${a[${{ params.n }}]}\""), V{"a ${…} expansion@10"});
  EXPECT_EQ(wheres("echo ${v:-${{ params.n }}}"), V{"a ${…} expansion@10"});
  EXPECT_EQ(wheres("a[${{ params.n }}]=1"), V{"an array subscript@2"});
  EXPECT_EQ(wheres("echo \\${{ params.n }}"), V{"after a backslash@6"});
  EXPECT_EQ(wheres("echo $${{ params.n }}"), V{"after a $@6"});
  EXPECT_EQ(wheres("echo $'a\\'${{ params.n }}'"), V{"$'…' quotes@10"});
  // Builtins that take a variable name evaluate its a[…] subscript (bash).
  const std::string name = "a variable name (unset, read, printf -v, test -v, declare)";
  EXPECT_EQ(wheres("unset ${{ params.n }}"), V{name + "@6"});
  EXPECT_EQ(wheres("read -r ${{ params.n }} </dev/null"), V{name + "@8"});
  EXPECT_EQ(wheres("printf -v ${{ params.n }} x"), V{name + "@10"});
  EXPECT_EQ(wheres("[ -v ${{ params.n }} ] && echo set"), V{name + "@5"});
  EXPECT_EQ(wheres("test -v $(echo ${{ params.n }})"), V{name + "@15"});
  EXPECT_EQ(wheres("declare ${{ params.n }}=1"), V{name + "@8"});
  EXPECT_EQ(wheres("declare -n r=${{ params.n }}"), V{"the arguments of let or declare -i@13"});
  EXPECT_EQ(wheres("declare -i n m=1; m=${{ params.a }}; n+=${{ params.b }}; k=${{ params.c }}"),
            (V{"the arguments of let or declare -i@20", "the arguments of let or declare -i@40"}))
      << "assigning to an integer variable evaluates the value";
  // Nested: arithmetic anywhere below wins over the $( ) that would make a word.
  EXPECT_EQ(wheres("echo $(( $(echo ${{ params.n }}) + 1 ))"), V{"arithmetic@16"});
  EXPECT_EQ(wheres("echo \"$(echo $(( ${{ params.n }} )))\""), V{"arithmetic@17"});
  EXPECT_EQ(wheres("x=$( [[ -n ${{ params.n }} ]] && echo y )"), V{"[[ ]]@11"});
  EXPECT_EQ(wheres("echo $(( (1 + 2) * ${{ params.a }} )) ${{ params.b }}"), V{"arithmetic@19"})
      << "the inner ( ) does not close the arithmetic early";
}

// Where a single-quoted word still stands as one word, nothing is refused; and an
// int() template renders digits only, so it may stand anywhere.
TEST(ShellContextTest, BareWordsNextToArithmeticAndIntTemplatesAreAllowed) {
  EXPECT_TRUE(wheres("echo $((1 + 2)) ${{ params.n }}").empty());
  EXPECT_TRUE(wheres("[[ -f x ]] && cp ${{ params.a }} y").empty());
  EXPECT_TRUE(wheres("echo ${HOME} ${{ params.a }} ${v:-x}").empty());
  EXPECT_TRUE(wheres("echo let ${{ params.a }}; declare x=${{ params.b }}").empty());
  EXPECT_TRUE(wheres("case $x in a) echo ${{ params.a }};; esac").empty());
  EXPECT_TRUE(wheres("export P=${{ params.a }}:$P; local v=${{ params.b }}; read -r l <<< ${{ params.c }}").empty());
  EXPECT_TRUE(wheres("[ -f ${{ params.a }} ] && printf '%s' ${{ params.b }}; unset v; echo ${{ params.c }}").empty());
  EXPECT_TRUE(wheres("y=$(case $x in a) echo ${{ params.a }};; esac) && echo ${{ params.b }}").empty());
  EXPECT_TRUE(wheres("echo $(( ${{ int(params.n) }} / 2 )); (( ${{int(stages.a.outputs.n)}} > 1 ))").empty());
  EXPECT_TRUE(
      wheres("let n=${{ int(params.n) }}; [[ ${{ int(params.n) }} -eq 1 ]]; echo \"${{ int(params.n) }}\"").empty());
}

TEST(ShellContextTest, ValidateRefusesATemplateInArithmeticAtItsPlaceAndSaysHowToPassANumber) {
  std::string text = diagnostics(
      "name: q\nparams:\n  n: '4'\nstages:\n  s:\n    run: |\n      echo half $(( ${{ params.n }} / 2 ))\n"
      "      echo \\${{ params.n }}\n");
  for (const char* says :
       {"wf.yaml:7:21: stage 's' run: ${{ params.n }} stands inside arithmetic",
        "write ${{ int(params.n) }}, which fails the stage unless the value is an integer", "env: and use \"$N\"",
        "wf.yaml:8:13: stage 's' run: ${{ params.n }} stands after a backslash"}) {
    EXPECT_NE(text.find(says), std::string::npos) << says << "\nnot in\n" << text;
  }
  EXPECT_EQ(diagnostics("name: q\nparams:\n  n: '4'\nstages:\n  s:\n    run: echo $(( ${{ int(params.n) }} / 2 ))\n"),
            "");
}

TEST(ShellContextTest, ValidateRefusesATemplateInsideQuotesAtItsPlace) {
  std::string text = diagnostics(
      "name: q\nparams:\n  x: a\nstages:\n  s:\n    run: |\n      echo ok\n"
      "      echo \"${{ params.x }}\"\n");
  EXPECT_NE(text.find("wf.yaml:8:13: stage 's' run: ${{ params.x }} stands inside double quotes"), std::string::npos)
      << text;
  EXPECT_EQ(diagnostics("name: q\nparams:\n  x: a\nstages:\n  s:\n    run: echo ${{ params.x }}\n"), "");
}

}  // namespace
}  // namespace ferry::workflow
