#include "transfer/copy_manifest.h"

#include <nlohmann/json.hpp>

#include "base/file_hash.h"

namespace ferry {

CopyManifest::CopyManifest() : state_(XXH3_createState()) {
  XXH3_128bits_reset(state_);
  XXH3_128bits_update(state_, "[", 1);
}

CopyManifest::~CopyManifest() { XXH3_freeState(state_); }

void CopyManifest::add(const std::string& rel, int64_t size, const std::string& file_hash) {
  // One element as nlohmann writes it inside the array (the manifest's format since it began).
  std::string entry = (first_ ? "" : ",") + nlohmann::json::array({rel, size, file_hash}).dump();
  first_ = false;
  XXH3_128bits_update(state_, entry.data(), entry.size());
}

std::string CopyManifest::hash() {
  XXH3_128bits_update(state_, "]", 1);
  return xxh128_canonical_hex(XXH3_128bits_digest(state_));
}

}  // namespace ferry
