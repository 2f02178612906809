// CopyManifest: the hash of a finished copy's manifest — each file's relative
// path, size and whole-file hash, in listing order — as the `manifest_hash`
// output and the completion marker hold it.
//
// The manifest is the JSON text [[rel,size,hash],...] hashed with XXH3-128; it is
// hashed as it is written, a file at a time, so a folder of 100,000 files costs
// no manifest held in memory (it used to be a JSON array of every entry, and
// then its text, both at once).
// One copy's manifest; not shared between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

struct XXH3_state_s;

namespace ferry {

class CopyManifest {
 public:
  CopyManifest();
  ~CopyManifest();
  CopyManifest(const CopyManifest&) = delete;
  CopyManifest& operator=(const CopyManifest&) = delete;

  /// The next file of the copy, in listing order.
  void add(const std::string& rel, int64_t size, const std::string& file_hash);
  /// The manifest's hash (32 hex digits); ends the manifest.
  std::string hash();

 private:
  XXH3_state_s* state_;
  bool first_ = true;
};

}  // namespace ferry
