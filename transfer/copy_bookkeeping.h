// The names of ferry's own files in a copy's destination folder: part files,
// journals, the completion marker and the record of copied files. Header-only, with
// no dependencies, so that a reader of such a folder outside transfer/ (the eval
// engine's model fingerprint, jobs/eval/io/model_fingerprint.h) skips them as the
// copy itself does. Pure functions; any thread.
#pragma once

#include <cstring>
#include <string>

namespace ferry {

/// Written last into a copied folder, holding the copy's manifest hash (copy_plan.h).
inline constexpr const char* kCompleteMarker = ".ferry-complete";
/// The relative paths a folder copy brought in (copied_files.h).
inline constexpr const char* kCopiedFilesName = ".ferry-files";

/// ferry's own files beside a destination (part files, journals, markers, the
/// record of copied files), by name: they never travel and are never pruned. A
/// user's `weights.ferry-partial.bin` is theirs.
inline bool is_copy_bookkeeping(const std::string& name) {
  for (const char* suffix : {".ferry-part", ".ferry-journal", ".ferry-spec", ".ferry-owner", ".ferry-lock"}) {
    const size_t n = std::strlen(suffix);
    if (name.size() >= n && name.compare(name.size() - n, n, suffix) == 0) return true;
  }
  return name == kCompleteMarker || name == kCopiedFilesName;
}

}  // namespace ferry
