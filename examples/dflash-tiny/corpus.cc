#include "examples/dflash-tiny/corpus.h"

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <random>

namespace ferry::dflash_tiny {
namespace {

const char* const kNames[] = {"maria", "oliver", "sofia", "lucas", "emma",   "noah",  "chloe", "hugo",
                              "ines",  "james",  "ada",   "tariq", "yuki",   "pedro", "lena",  "omar"};
const char* const kCities[] = {"lisbon", "paris", "berlin", "tokyo", "cairo", "lima",  "oslo", "rome",
                               "dublin", "seoul", "quito",  "delhi", "accra", "hanoi", "bern", "porto"};
const char* const kAdjs[] = {"quick", "lazy", "red", "small", "happy", "old", "bright", "quiet"};
const char* const kNouns[] = {"fox", "dog", "cat", "bird", "robot", "river", "train", "garden"};
const char* const kVerbs[] = {"jumps over", "looks at", "runs past", "waits for", "follows", "finds"};

template <size_t N>
const char* pick(std::mt19937_64& rng, const char* const (&list)[N]) {
  return list[rng() % N];
}

// "#0412 name=maria city=lisbon age=34 score=73\n" lines with increasing ids.
std::string records(std::mt19937_64& rng) {
  std::string s;
  int id = static_cast<int>(rng() % 9000) + 100;
  const int lines = 3 + static_cast<int>(rng() % 3);
  for (int i = 0; i < lines; ++i) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "#%04d name=%s city=%s age=%d score=%d\n", id + i, pick(rng, kNames),
                  pick(rng, kCities), 18 + static_cast<int>(rng() % 60), static_cast<int>(rng() % 100));
    s += buf;
  }
  return s;
}

// "count: 17 18 19 ..." (step 1, 2, 5 or 10).
std::string counting(std::mt19937_64& rng) {
  const int steps[] = {1, 2, 5, 10};
  const int step = steps[rng() % 4];
  int x = static_cast<int>(rng() % 200);
  std::string s = "count by " + std::to_string(step) + ":";
  const int n = 14 + static_cast<int>(rng() % 10);
  for (int i = 0; i < n; ++i, x += step) s += " " + std::to_string(x);
  return s + ".\n";
}

// "12+7=19; 13+7=20; ..." — the left operand increases by one.
std::string arithmetic(std::mt19937_64& rng) {
  int a = static_cast<int>(rng() % 50);
  const int b = 1 + static_cast<int>(rng() % 9);
  std::string s;
  const int n = 7 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i, ++a)
    s += std::to_string(a) + "+" + std::to_string(b) + "=" + std::to_string(a + b) + "; ";
  s.back() = '\n';
  return s;
}

// "the quick fox jumps over the lazy dog. the quick fox ..." — one sentence, repeated.
std::string sentences(std::mt19937_64& rng) {
  std::string sentence = std::string("the ") + pick(rng, kAdjs) + " " + pick(rng, kNouns) + " " + pick(rng, kVerbs) +
                         " the " + pick(rng, kAdjs) + " " + pick(rng, kNouns) + ".";
  std::string s = sentence;
  const int n = 3 + static_cast<int>(rng() % 3);
  for (int i = 1; i < n; ++i) s += " " + sentence;
  return s + "\n";
}

}  // namespace

std::string make_document(uint64_t seed, int64_t index) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index));
  switch (rng() % 4) {
    case 0: return records(rng);
    case 1: return counting(rng);
    case 2: return arithmetic(rng);
    default: return sentences(rng);
  }
}

Status write_tokens(const std::string& path, const std::vector<uint16_t>& tokens) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return errno_status(path + ": cannot create", errno);
  for (uint16_t t : tokens) {
    const char b[2] = {static_cast<char>(t & 0xff), static_cast<char>(t >> 8)};
    out.write(b, 2);
  }
  if (!out) return errno_status(path + ": write failed", errno);
  return Status();
}

Result<std::vector<uint16_t>> read_tokens(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno_status(path + ": cannot open", errno);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % 2 != 0) return invalid_argument(path + ": odd length, not a uint16 token file");
  std::vector<uint16_t> tokens(bytes.size() / 2);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<uint16_t>(static_cast<unsigned char>(bytes[2 * i]) |
                                      (static_cast<unsigned char>(bytes[2 * i + 1]) << 8));
    if (tokens[i] >= kVocabSize)
      return invalid_argument(path + ": token " + std::to_string(tokens[i]) + " out of range");
  }
  return tokens;
}

}  // namespace ferry::dflash_tiny
