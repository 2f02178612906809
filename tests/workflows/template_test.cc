// ${{ }} templates: parsing references, expanding them, and shell quoting.
// The quoting tests hand the quoted word to a real /bin/sh and compare bytes.
#include "workflows/template.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace ferry::workflow {
namespace {

using Kind = Reference::Kind;

TEST(TemplateTest, ParsesEveryReferenceForm) {
  auto refs = parse_references(
      "a ${{ params.lr }} b ${{stages.train.outputs.ckpt}} ${{ hosts.gpu-box.workdir }}"
      "${{ hosts.gpu.address }} ${{ run.id }}");
  ASSERT_TRUE(refs.ok()) << refs.status().message();
  ASSERT_EQ(refs->size(), 5u);
  EXPECT_EQ((*refs)[0].kind, Kind::kParam);
  EXPECT_EQ((*refs)[0].name, "lr");
  EXPECT_EQ((*refs)[0].offset, 2u);
  EXPECT_EQ((*refs)[0].text, "params.lr");
  EXPECT_EQ((*refs)[1].kind, Kind::kStageOutput);
  EXPECT_EQ((*refs)[1].name, "train");
  EXPECT_EQ((*refs)[1].field, "ckpt");
  EXPECT_EQ((*refs)[1].text, "stages.train.outputs.ckpt");
  EXPECT_EQ((*refs)[2].kind, Kind::kHost);
  EXPECT_EQ((*refs)[2].name, "gpu-box");
  EXPECT_EQ((*refs)[2].field, "workdir");
  EXPECT_EQ((*refs)[3].kind, Kind::kHost);
  EXPECT_EQ((*refs)[3].field, "address");
  EXPECT_EQ((*refs)[4].kind, Kind::kRun);
  EXPECT_EQ((*refs)[4].name, "id");
}

TEST(TemplateTest, TextWithoutTemplatesHasNoReferences) {
  for (const char* s : {"", "plain", "${HOME} $((1+2)) ${ {x} }", "{{ params.x }}", "$ {{ params.x }}"}) {
    auto refs = parse_references(s);
    ASSERT_TRUE(refs.ok()) << s;
    EXPECT_TRUE(refs->empty()) << s;
  }
}

TEST(TemplateTest, RejectsBadExpressions) {
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {"${{ params.lr", "unterminated '${{'"},
           {"ok ${{ run.id }} then ${{ params.x }", "unterminated '${{'"},
           {"${{ }}", "bad template expression"},
           {"${{ params.a b }}", "bad template expression '${{ params.a b }}'"},
           {"${{ params. }}", "bad template expression"},
           {"${{ params.$x }}", "bad template expression"},
           {"${{ env.HOME }}", "unknown template expression '${{ env.HOME }}'"},
           {"${{ params }}", "unknown template expression"},
           {"${{ params.a.b }}", "unknown template expression"},
           {"${{ stages.a.outputs }}", "unknown template expression"},
           {"${{ stages.a.results.b }}", "unknown template expression"},
           {"${{ hosts.a.user }}", "unknown template expression"},
           {"${{ run.name }}", "unknown template expression"},
       }) {
    auto refs = parse_references(c.text);
    ASSERT_FALSE(refs.ok()) << c.text;
    EXPECT_NE(refs.status().message().find(c.error), std::string::npos) << c.text << " → " << refs.status().message();
  }
}

Result<std::string> fake_values(const Reference& r) {
  if (r.kind == Kind::kParam && r.name == "who") return std::string("it's me");
  if (r.kind == Kind::kParam && r.name == "n") return std::string("3");
  if (r.kind == Kind::kRun) return std::string("r-42");
  return not_found("nothing for " + r.text);
}

TEST(TemplateTest, ExpandsWithoutQuoting) {
  auto s = expand_template("hi ${{ params.who }}, run ${{run.id}}: ${{ params.n }}x", fake_values, false);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(*s, "hi it's me, run r-42: 3x");
}

TEST(TemplateTest, ExpandsEachValueAsOneShellWord) {
  auto s = expand_template("echo ${{ params.who }} ${{ params.n }}>f", fake_values, true);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(*s, "echo 'it'\\''s me' '3'>f");
}

TEST(TemplateTest, TextWithoutTemplatesIsUnchanged) {
  auto s = expand_template("echo \"$HOME\" '${x}' }}", fake_values, true);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "echo \"$HOME\" '${x}' }}");
}

TEST(TemplateTest, ExpansionPassesOnResolverErrors) {
  auto s = expand_template("a ${{ params.missing }}", fake_values, false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("params.missing"), std::string::npos);
}

TEST(TemplateTest, ExpansionRejectsBadTemplates) {
  auto s = expand_template("a ${{ params.who", fake_values, false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unterminated"), std::string::npos);
}

// Review-4 P2: int() stands bare (digits may sit in arithmetic) and refuses
// anything but an integer, naming where the value came from.
TEST(TemplateTest, IntFilterParsesAndRendersOnlyAnInteger) {
  auto refs = parse_references("echo $(( ${{ int( stages.count.outputs.n ) }} / 2 ))");
  ASSERT_TRUE(refs.ok()) << refs.status().message();
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_TRUE((*refs)[0].integer);
  EXPECT_EQ((*refs)[0].kind, Kind::kStageOutput);
  EXPECT_EQ((*refs)[0].name, "count");
  EXPECT_EQ((*refs)[0].field, "n");
  EXPECT_FALSE(parse_references("${{ int(env.HOME) }}").ok());
  EXPECT_FALSE(parse_references("${{ int() }}").ok());

  auto with = [](const std::string& value) {
    return expand_template(
        "x=$(( ${{ int(stages.count.outputs.n) }} + 1 ))",
        [&](const Reference&) -> Result<std::string> { return value; }, true);
  };
  for (const std::string ok : {"42", "-7", "0", "1234567890123456789"}) {
    auto r = with(ok);
    ASSERT_TRUE(r.ok()) << ok << ": " << r.status().message();
    EXPECT_EQ(*r, "x=$(( " + ok + " + 1 ))");
  }
  for (const std::string bad :
       {"", "-", "4 2", "1e3", "0x10", "x;$(touch M)1", "a[$(touch M)]", "12345678901234567890", "+1", "1\n", "7\n"}) {
    auto r = with(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("the value of stages.count.outputs.n is '"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("not an integer"), std::string::npos) << r.status().message();
  }
  auto line = with("1\n$(reboot)");
  ASSERT_FALSE(line.ok());
  EXPECT_NE(line.status().message().find("is '1\\x0a$(reboot)'"), std::string::npos) << line.status().message();
  EXPECT_TRUE(expand_template("${{ params.who }}", fake_values, true).ok()) << "plain templates unchanged";
}

TEST(TemplateTest, ShellQuoteWrapsInSingleQuotes) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("abc"), "'abc'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(x) `y` \"z\""), "'$(x) `y` \"z\"'");
}

// Runs `command` with /bin/sh -c and returns its stdout, or fails the test.
std::string run_sh(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");  // popen runs /bin/sh -c
  if (!p) {
    ADD_FAILURE() << "popen failed";
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << command;
  return out;
}

const std::vector<std::string>& nasty_values() {
  static const std::vector<std::string> values = {
      "",
      " ",
      "plain",
      "two words",
      "it's",
      "''",
      "'",
      "\"double\" \"",
      "$(echo pwned)",
      "`echo pwned`",
      "$HOME ${HOME} $1 $@ $$",
      "a; echo pwned",
      "a && b || c | d & e",
      "line one\nline two\n",
      "\n",
      "trailing newlines\n\n\n",
      "tab\there",
      "back\\slash \\n \\' \\\\",
      "-n",
      "--",
      "*.yaml ? [a-z] ~ ~root",
      "#not a comment",
      "a > out < in 2>&1",
      "{a,b} (sub) !bang",
      "h\xc3\xa9llo \xe2\x9c\x93",
      "'\"'\"'$(`;\n`)'",
  };
  return values;
}

TEST(TemplateTest, ShellQuotedValuesComeBackByteIdenticalThroughSh) {
  for (const auto& v : nasty_values()) {
    EXPECT_EQ(run_sh("printf %s " + shell_quote(v)), v) << "value: " << v;
  }
}

TEST(TemplateTest, ExpandedRunLineKeepsEachValueOneWord) {
  // printf '[%s]' prints each argument in brackets: one pair per word.
  for (const auto& v : nasty_values()) {
    auto line = expand_template("printf '[%s]' ${{ params.v }} ${{ params.v }}",
                                [&](const Reference&) -> Result<std::string> { return v; }, true);
    ASSERT_TRUE(line.ok());
    EXPECT_EQ(run_sh(*line), "[" + v + "][" + v + "]") << "value: " << v;
  }
}

TEST(TemplateTest, QuotedCommandSubstitutionDoesNotRun) {
  char dir_template[] = "/tmp/ferry-template-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  std::string marker = std::string(dir_template) + "/ran";
  std::string value = "$(touch " + marker + ") `touch " + marker + "`; touch " + marker;
  EXPECT_EQ(run_sh("printf %s " + shell_quote(value)), value);
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the value was executed";
  // The same command unquoted does run: the check above can fail.
  run_sh("true " + value);
  EXPECT_EQ(::access(marker.c_str(), F_OK), 0);
  ::unlink(marker.c_str());
  ::rmdir(dir_template);
}

}  // namespace
}  // namespace ferry::workflow
