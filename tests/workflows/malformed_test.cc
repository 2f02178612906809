// Runs every file in tests/workflows/malformed/ through the parser and checks
// that it reports exactly the diagnostics the file's `# expect:` lines list.
//
// Each corpus file was written by hand, one fault class per file (two files
// hold several), and its expected LINE:COL were counted by hand from the file
// (1-based; the token the message is about), not copied from the parser.
// Format of an expectation, one per diagnostic:
//   # expect: LINE:COL: substring of the message
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "workflows/parser.h"

namespace ferry::workflow {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMinCorpusFiles = 24;
constexpr char kExpectPrefix[] = "# expect: ";

struct Expectation {
  int line = 0;
  int column = 0;
  std::string substring;
  std::string as_written;
};

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(FERRY_MALFORMED_DIR, ec)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// "12:5: message" → {12, 5, "message"}; false when the line is not of that form.
bool parse_expectation(const std::string& rest, Expectation* e) {
  size_t c1 = rest.find(':');
  if (c1 == std::string::npos) return false;
  size_t c2 = rest.find(':', c1 + 1);
  if (c2 == std::string::npos || c2 + 2 > rest.size() || rest[c2 + 1] != ' ') return false;
  try {
    size_t used = 0;
    e->line = std::stoi(rest.substr(0, c1), &used);
    if (used != c1) return false;
    e->column = std::stoi(rest.substr(c1 + 1, c2 - c1 - 1), &used);
    if (used != c2 - c1 - 1) return false;
  } catch (const std::exception&) {
    return false;
  }
  e->substring = rest.substr(c2 + 2);
  e->as_written = rest;
  return !e->substring.empty() && e->line > 0 && e->column > 0;
}

std::string describe(const Diagnostics& d) {
  std::string s = d.to_string();
  return s.empty() ? "(no diagnostics)\n" : s;
}

class MalformedTest : public ::testing::TestWithParam<fs::path> {};

TEST_P(MalformedTest, ReportsExactlyTheExpectedDiagnostics) {
  const fs::path& path = GetParam();
  std::string text = read_all(path);
  ASSERT_FALSE(text.empty()) << path;

  std::vector<Expectation> expected;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(kExpectPrefix, 0) != 0) continue;
    Expectation e;
    ASSERT_TRUE(parse_expectation(line.substr(sizeof(kExpectPrefix) - 1), &e)) << "malformed expect line: " << line;
    expected.push_back(e);
  }
  ASSERT_FALSE(expected.empty()) << path << " has no '# expect:' line";

  Diagnostics d(path.filename().string());
  Workflow wf = parse_workflow_collecting(path.filename().string(), text, &d);

  // Match each expectation to a distinct diagnostic at the same place.
  std::vector<bool> used(d.list().size(), false);
  for (const auto& e : expected) {
    bool found = false;
    for (size_t i = 0; i < d.list().size() && !found; ++i) {
      const Diagnostic& g = d.list()[i];
      if (used[i] || g.at.line != e.line || g.at.column != e.column) continue;
      if (g.message.find(e.substring) == std::string::npos) continue;
      used[i] = found = true;
    }
    EXPECT_TRUE(found) << "expected " << e.as_written << "\ngot:\n" << describe(d);
  }
  EXPECT_EQ(d.size(), expected.size()) << "the diagnostics were:\n" << describe(d);

  // The Status form carries the same diagnostics, one `file:line:col: message` per line.
  auto r = parse_workflow(path.filename().string(), text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(static_cast<size_t>(std::count(r.status().message().begin(), r.status().message().end(), '\n')) + 1,
            expected.size())
      << r.status().message();
  for (const auto& e : expected) {
    std::string place = path.filename().string() + ":" + std::to_string(e.line) + ":" + std::to_string(e.column) + ": ";
    EXPECT_NE(r.status().message().find(place), std::string::npos) << place << " not in\n" << r.status().message();
  }
}

std::string test_name(const ::testing::TestParamInfo<fs::path>& info) {
  std::string name = info.param.stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, MalformedTest, ::testing::ValuesIn(corpus_files()), test_name);

TEST(MalformedCorpusTest, HasEnoughFiles) {
  EXPECT_GE(corpus_files().size(), kMinCorpusFiles) << "corpus folder: " << FERRY_MALFORMED_DIR;
}

TEST(MalformedCorpusTest, ExpectationParserRejectsBadLines) {
  Expectation e;
  EXPECT_TRUE(parse_expectation("12:5: unknown key", &e));
  EXPECT_EQ(e.line, 12);
  EXPECT_EQ(e.column, 5);
  EXPECT_EQ(e.substring, "unknown key");
  EXPECT_FALSE(parse_expectation("12: unknown key", &e));
  EXPECT_FALSE(parse_expectation("x:5: unknown key", &e));
  EXPECT_FALSE(parse_expectation("12:5x: unknown key", &e));
  EXPECT_FALSE(parse_expectation("12:5:", &e));
  EXPECT_FALSE(parse_expectation("0:5: at nowhere", &e));
}

}  // namespace
}  // namespace ferry::workflow
