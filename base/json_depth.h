// How deep JSON nests, read off the text before a parser or a recursive walk (dump(),
// operator==, a reader that recurses per level) sees it: deep input from a peer or an
// untrusted file is refused instead of overflowing the stack. Pure function, any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ferry {

/// The deepest nesting of arrays and objects in JSON text (brackets inside strings do
/// not count), without building anything; a linear scan.
int json_nesting_depth(std::string_view text);

/// Files ferry reads but did not write (a model's tokenizer.json and config.json, a
/// safetensors header, a prompt line) nest a handful of levels; past this they are refused.
constexpr int kMaxFileJsonDepth = 64;

/// invalid_argument "<where>: nested deeper than <max_depth> levels" when `text` is.
Status check_json_depth(std::string_view text, const std::string& where, int max_depth = kMaxFileJsonDepth);

}  // namespace ferry
