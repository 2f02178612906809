#include "workflows/slurm_options.h"

#include <cctype>
#include <cstring>

#include "base/split.h"

namespace ferry::workflow {
namespace {

bool plain_word(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

bool digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Flags whose job ferry does itself: a user's value would break tracking or resume.
// ("workdir": --chdir's name before Slurm 18.)
const char* const kOwnedLong[] = {"job-name", "output",  "error",   "open-mode",  "parsable", "wrap",
                                  "chdir",    "workdir", "requeue", "no-requeue", "array",    "wait",
                                  "comment",  "export",  "input",   "test-only",  "hold"};
const char kOwnedShort[] = "JoeDaiWH";
// sbatch's short options that take a value (its getopt string): the rest of the word
// is that value. Any other letter may be followed by more options in the same word.
const char kShortWithValue[] = "aABcCdDeFGiJLmMnNopqStwx";

// What sbatch's getopt_long reads `name` (the text after "--") as, when that is one
// of ferry's flags: an exact name, or an abbreviation of one (--outp, --chd, --exp).
// "" for a name that can mean no owned flag.
std::string owned_long(const std::string& name) {
  for (const char* owned : kOwnedLong) {
    if (name == owned) return std::string("--") + owned;
  }
  for (const char* owned : kOwnedLong) {
    if (!name.empty() && std::string(owned).compare(0, name.size(), name) == 0) return std::string("--") + owned;
  }
  return "";
}

// The owned flag that a word of short options sets, as getopt reads it: -vo FILE is
// -v then -o with the value " FILE". "" when none.
std::string owned_short(const std::string& word) {
  for (size_t i = 1; i < word.size(); ++i) {
    const char c = word[i];
    if (std::strchr(kOwnedShort, c) != nullptr) return std::string("-") + c;
    if (std::strchr(kShortWithValue, c) != nullptr) return "";
  }
  return "";
}

}  // namespace

const std::vector<std::string>& slurm_retry_causes() {
  static const std::vector<std::string> causes = {"TIMEOUT",   "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                                                  "CANCELLED", "BOOT_FAIL", "LOST"};
  return causes;
}

std::string slurm_value_problem(const std::string& key, const std::string& value) {
  if (key == "partition" || key == "account" || key == "qos") {
    return plain_word(value) ? "" : "must be a plain name (letters, digits, '_', '-', '.'), got '" + value + "'";
  }
  if (key == "mem") {
    std::string n = value;
    if (!n.empty() && std::string("KMGTkmgt").find(n.back()) != std::string::npos) n.pop_back();
    return digits(n) ? "" : "must be a size like 4000, 512M, 16G or 1T, got '" + value + "'";
  }
  if (key == "gres") {
    // name, name:count or name:type:count; several separated by ','.
    for (const std::string& one : split(value, ',')) {
      std::vector<std::string> parts = split(one, ':');
      bool ok = parts.size() <= 3 && plain_word(parts[0]);
      if (ok && parts.size() == 2) ok = digits(parts[1]) || plain_word(parts[1]);
      if (ok && parts.size() == 3) ok = plain_word(parts[1]) && digits(parts[2]);
      if (!ok) return "must be like gpu:1, gpu:a100:2 or gpu, got '" + value + "'";
    }
    return "";
  }
  return "is not a slurm option";
}

std::string slurm_extra_problem(const std::string& flag) {
  if (flag.size() < 2 || flag[0] != '-') return "must be an sbatch flag like --constraint=h100, got '" + flag + "'";
  for (char c : flag) {
    if (c == '\n' || c == '\r' || c == '\0') return "must be one line, got '" + flag + "'";
  }
  std::string owned;
  if (flag[1] == '-') {
    std::string name = flag.substr(2, flag.find('=') == std::string::npos ? std::string::npos : flag.find('=') - 2);
    if (name.empty()) return "must be an sbatch flag like --constraint=h100, got '" + flag + "'";
    owned = owned_long(name);
  } else {
    owned = owned_short(flag);
  }
  if (owned.empty()) return "";
  const std::string written = flag.substr(0, flag.find('='));
  return "sets " + owned + (written == owned ? "" : " (sbatch reads '" + written + "' as " + owned + ")") +
         ", which ferry sets itself (the job's name, output and folder are how it finds the job again); leave it out";
}

SlurmOptions merge_slurm(const SlurmOptions& host, const SlurmOptions& stage) {
  SlurmOptions m = host;
  if (!stage.partition.empty()) m.partition = stage.partition;
  if (!stage.account.empty()) m.account = stage.account;
  if (!stage.qos.empty()) m.qos = stage.qos;
  if (!stage.mem.empty()) m.mem = stage.mem;
  if (!stage.gres.empty()) m.gres = stage.gres;
  if (stage.cpus > 0) m.cpus = stage.cpus;
  if (stage.time_s > 0) m.time_s = stage.time_s;
  m.extra.insert(m.extra.end(), stage.extra.begin(), stage.extra.end());
  m.given = host.given || stage.given;
  if (stage.given) m.at = stage.at;
  return m;
}

}  // namespace ferry::workflow
