#include "tests/fuzz/random_input.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace ferry::fuzz {
namespace {

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtoull(v, nullptr, 10);
}

// The round under way, for the crash handler and the watchdog (async-signal-safe reads).
std::atomic<const char*> g_what{nullptr};
std::atomic<uint64_t> g_seed{0};
std::atomic<int> g_round{-1};
std::atomic<int64_t> g_started_ms{0};
std::atomic<int64_t> g_limit_ms{0};

int64_t mono_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void say_round(const char* why) {
  const char* what = g_what.load();
  if (what == nullptr) return;
  char line[512];
  int n =
      std::snprintf(line, sizeof line, "\nfuzz: %s in %s round %d (replay: FERRY_FUZZ_SEED=%llu FERRY_FUZZ_ROUND=%d)\n",
                    why, what, g_round.load(), static_cast<unsigned long long>(g_seed.load()), g_round.load());
  if (n > 0) (void)!::write(2, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1)));
}

void on_fatal_signal(int sig) {
  say_round(sig == SIGABRT ? "abort" : "crash");
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_once() {
  static bool done = false;
  if (done) return;
  done = true;
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizers keep their own SEGV handler and report; they call this before exiting.
  __sanitizer_set_death_callback([] { say_round("sanitizer report"); });
  ::signal(SIGABRT, on_fatal_signal);
#else
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, on_fatal_signal);
#endif
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      int64_t started = g_started_ms.load();
      if (started != 0 && mono_ms_now() - started > g_limit_ms.load()) {
        say_round("hang (round over its time limit)");
        std::abort();
      }
    }
  }).detach();
}

const std::vector<std::string>& odd_texts() {
  static const std::vector<std::string> texts = {
      "-1", "0", "-0", "1e308", "-1e308", "1e-400", "4294967295", "4294967296", "2147483648",
      "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551615",
      "18446744073709551616", "99999999999999999999999999", "0.5", "NaN", "null", "true", "\"\"", "[]", "{}",
      "\"..\"", "\"../../..\"", "\"/\"", "\xff\xfe", "\\u0000", "\"\\ud800\"", "&a", "*a", "!!binary", "~", "\t",
      "{\"a\":", "[[[[[[[[", "- - - - -", ": :", "'", "\"", "${{ x }}", "${{", "}}", "%", "\r\n"};
  return texts;
}

}  // namespace

FuzzPlan fuzz_plan(int default_rounds) {
  FuzzPlan plan;
  plan.seed = env_u64("FERRY_FUZZ_SEED", 1);
  plan.end = static_cast<int>(env_u64("FERRY_FUZZ_ROUNDS", static_cast<uint64_t>(default_rounds)));
  if (const char* only = std::getenv("FERRY_FUZZ_ROUND"); only != nullptr && *only != '\0') {
    plan.first = std::atoi(only);
    plan.end = plan.first + 1;
  }
  return plan;
}

bool failed_in_round(const FuzzPlan& plan, int round) {
  if (!::testing::Test::HasFailure()) return false;
  ADD_FAILURE() << "round " << round << " (replay: FERRY_FUZZ_SEED=" << plan.seed << " FERRY_FUZZ_ROUND=" << round
                << ")";
  return true;
}

Mutator::Mutator(uint64_t seed, int round) {
  // One stream per (seed, round): a round replays without the rounds before it.
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(round),
                    0x66657272u};
  rng_.seed(seq);
}

size_t Mutator::below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

uint64_t Mutator::odd_word() {
  static const uint64_t words[] = {0,
                                   1,
                                   2,
                                   7,
                                   8,
                                   9,
                                   255,
                                   256,
                                   65535,
                                   65536,
                                   (1u << 20),
                                   (1u << 20) + 1,
                                   (65u << 20),
                                   (65u << 20) + 1,
                                   0x7fffffffu,
                                   0x80000000u,
                                   0xffffffffu,
                                   uint64_t{1} << 32,
                                   uint64_t{1} << 50,
                                   uint64_t{1} << 62,
                                   uint64_t(std::numeric_limits<int64_t>::max()),
                                   uint64_t(std::numeric_limits<int64_t>::min()),
                                   std::numeric_limits<uint64_t>::max(),
                                   std::numeric_limits<uint64_t>::max() - 7};
  return words[below(sizeof words / sizeof words[0])];
}

std::string Mutator::mutate_bytes(const std::string& seed, const std::vector<std::string>& others) {
  std::string s = seed;
  int edits = 1 + static_cast<int>(below(4));
  for (int e = 0; e < edits; ++e) {
    size_t pos = below(s.size() + 1);
    switch (below(10)) {
      case 0:  // flip a bit
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
        break;
      case 1: {  // an interesting byte
        static const char bytes[] = {'\0', '\xff', '\x7f', '\x80', '"', '{', '}', '[',
                                     ']',  ':',    ',',    '\n',   ' ', '-', '\\'};
        if (!s.empty()) s[below(s.size())] = bytes[below(sizeof bytes)];
        break;
      }
      case 2: {  // an interesting little-endian word
        uint64_t w = odd_word();
        size_t width = chance(50) ? 4 : 8;
        for (size_t i = 0; i < width && pos + i < s.size(); ++i) s[pos + i] = static_cast<char>(w >> (8 * i));
        break;
      }
      case 3:  // truncate
        s.resize(pos);
        break;
      case 4:  // delete a range
        if (pos < s.size()) s.erase(pos, 1 + below(std::min<size_t>(s.size() - pos, 64)));
        break;
      case 5: {  // repeat a range
        if (s.empty() || s.size() > (1u << 20)) break;
        size_t from = below(s.size()), len = 1 + below(std::min<size_t>(s.size() - from, 256));
        std::string piece = s.substr(from, len);
        for (size_t k = below(8); k-- > 0;) s.insert(pos, piece);
        break;
      }
      case 6: {  // splice: our head, another seed's tail
        if (others.empty()) break;
        const std::string& o = others[below(others.size())];
        s = s.substr(0, pos) + o.substr(below(o.size() + 1));
        break;
      }
      case 7:  // an odd token
        s.insert(pos, odd_texts()[below(odd_texts().size())]);
        break;
      case 8: {  // deep nesting
        static const char* openers[] = {"[", "{\"a\":", "- ", "[{\"x\":"};
        std::string open = openers[below(4)];
        std::string deep;
        for (size_t k = 100 + below(20000); k-- > 0;) deep += open;
        s.insert(pos, deep);
        break;
      }
      default:  // a random byte
        if (!s.empty()) s[below(s.size())] = static_cast<char>(next());
        break;
    }
  }
  return s;
}

std::string deep_marker(int depth) { return std::string(kDeepMarker) + std::to_string(depth); }

std::string wire_text(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string quoted = "\"\\u001fdeep:";  // dump() writes the marker's \x1f as \u001f
  for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at)) {
    size_t digits = at + quoted.size(), close = text.find('"', digits);
    int depth = std::atoi(text.substr(digits, close - digits).c_str());
    text.replace(at, close + 1 - at, std::string(depth, '[') + std::string(depth, ']'));
    at += 2 * static_cast<size_t>(depth);
  }
  return text;
}

nlohmann::json Mutator::odd_value() {
  switch (below(12)) {
    case 0: return nullptr;
    case 1: return chance(50);
    case 2: return static_cast<int64_t>(odd_word());
    case 3: return odd_word();
    case 4: return chance(50) ? -1 : 0;
    case 5: {
      static const double reals[] = {0.5, -0.5, 1e308, -1e308, 1e-300, 4294967296.5, 9.3e18, -9.3e18};
      return reals[below(8)];
    }
    case 6: {
      static const char* strings[] = {"",        "..",       "../..", "a/../../b", ".", "x\ny",
                                      "\x1b[2J", "\xc3\xa9", "a b",   "-",         "0"};
      return strings[below(11)];
    }
    case 7: return sandbox + (chance(50) ? "/abs" : "/..");
    case 8: return std::string(1 + below(200000), static_cast<char>('a' + below(26)));
    case 9: return deep_marker(2 + static_cast<int>(below(300000)));
    case 10: return nlohmann::json::object({{"a", odd_word()}});
    default: return nlohmann::json::array({static_cast<int64_t>(odd_word()), "x"});
  }
}

nlohmann::json Mutator::mutate_json(const nlohmann::json& seed) {
  nlohmann::json v = seed;
  int edits = 1 + static_cast<int>(below(3));
  for (int e = 0; e < edits; ++e) {
    // Every place in the value (shallow enough to walk cheaply), then edit one.
    std::vector<nlohmann::json::json_pointer> places{nlohmann::json::json_pointer()};
    for (size_t i = 0; i < places.size() && places.size() < 4096; ++i) {
      const nlohmann::json& at = v[places[i]];
      if (places[i].to_string().size() > 200) continue;
      if (at.is_object()) {
        for (auto it = at.begin(); it != at.end(); ++it) places.push_back(places[i] / it.key());
      } else if (at.is_array() && at.size() < 64) {
        for (size_t k = 0; k < at.size(); ++k) places.push_back(places[i] / k);
      }
    }
    const auto& where = places[below(places.size())];
    nlohmann::json& target = v[where];
    switch (below(6)) {
      case 0:
      case 1:
        target = odd_value();
        break;
      case 2:  // drop it from its parent
        if (!where.empty()) {
          nlohmann::json& parent = v[where.parent_pointer()];
          if (parent.is_object()) parent.erase(where.back());
          else if (parent.is_array() && !parent.empty())
            parent.erase(parent.begin() + static_cast<long>(std::min<size_t>(
                                              std::strtoull(where.back().c_str(), nullptr, 10), parent.size() - 1)));
        }
        break;
      case 3:  // add a key
        if (target.is_object()) target[chance(50) ? "x" : "op"] = odd_value();
        else if (target.is_array()) target.push_back(odd_value());
        break;
      case 4:  // wrap it
        target = nlohmann::json::array({target});
        break;
      default:  // a number edged
        if (target.is_number()) target = static_cast<int64_t>(odd_word());
        else target = odd_value();
        break;
    }
  }
  return v;
}

RoundGuard::RoundGuard(const char* what, uint64_t seed, int round, double limit_s) {
  install_once();
  g_what = what;
  g_seed = seed;
  g_round = round;
  g_limit_ms = static_cast<int64_t>(limit_s * 1000);
  g_started_ms = mono_ms_now();
}

RoundGuard::~RoundGuard() {
  g_started_ms = 0;
  g_what = nullptr;
}

}  // namespace ferry::fuzz
