// file_hash: XXH3-128 (XXH128, seed 0) of a buffer or a file, as the agent
// bootstrap and `ferry-agent hash-self` (print_self_hash) print it.
//
// Format: the 16 bytes of XXH128_canonicalFromHash (high 64 bits first, big-endian)
// as 32 lowercase hex digits, which is also what `xxhsum -H2 FILE` prints.
// Header-only and depends on libxxhash alone, so the agent can share it.
// Pure functions; any thread.
#pragma once

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/status.h"

namespace ferry {

inline std::string xxh128_canonical_hex(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (unsigned char b : c.digest) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

inline std::string xxh128_hex(const void* data, size_t n) {
  return xxh128_canonical_hex(XXH3_128bits(data, n));
}

/// Streams the file through XXH3-128 in 1 MiB reads.
inline Result<std::string> xxh128_file_hex(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return errno_status("cannot open " + path, errno);
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  std::string buf(1 << 20, '\0');
  size_t got;
  while ((got = std::fread(&buf[0], 1, buf.size(), f)) > 0) XXH3_128bits_update(st, buf.data(), got);
  bool failed = std::ferror(f) != 0;
  int err = errno;
  std::fclose(f);
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  if (failed) return errno_status("cannot read " + path, err);
  return xxh128_canonical_hex(h);
}

/// `hash-self`: prints the hash of the running executable, what the bootstrap expects
/// from an agent it uploaded (the real one and the tests' stand-in alike); 0, or 1
/// with "`program`: the error" on stderr.
inline int print_self_hash(const char* program) {
  auto hex = xxh128_file_hex("/proc/self/exe");
  if (!hex.ok()) {
    std::fprintf(stderr, "%s: %s\n", program, hex.status().message().c_str());
    return 1;
  }
  std::printf("%s\n", hex->c_str());
  return 0;
}

}  // namespace ferry
