// Corpus: the deterministic byte-level corpus of the dflash-tiny example — templated
// records, counting runs, arithmetic chains and template sentences, made so a tiny
// model can predict several bytes ahead. Token ids: bytes 0..255, then the specials
// below (vocab 260). Plain functions, no libtorch; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ferry::dflash_tiny {

constexpr int64_t kEosId = 256;
constexpr int64_t kBosId = 257;  // reserved, unused by the corpus
constexpr int64_t kPadId = 258;
constexpr int64_t kMaskId = 259;
constexpr int64_t kVocabSize = 260;

/// One document of text (ASCII), deterministic in (seed, index).
std::string make_document(uint64_t seed, int64_t index);

/// Writes `tokens` as little-endian uint16.
Status write_tokens(const std::string& path, const std::vector<uint16_t>& tokens);
/// Reads a file written by write_tokens.
Result<std::vector<uint16_t>> read_tokens(const std::string& path);

}  // namespace ferry::dflash_tiny
