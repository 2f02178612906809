// Body buffers: chunk bodies (MiB-sized strings) recycled within one process.
//
// A relayed chunk is read into a fresh body on one link, written out on another,
// and dropped: without recycling, every chunk costs an allocation and a zero-fill
// of all its bytes (std::string cannot grow uninitialized), only for the bytes to
// be overwritten by the read that follows. A body handed back here is handed out
// again, its old bytes left in place for the next read to overwrite.
//
// Thread-safe: bodies are filled on one connection's thread and dropped on another's.
#pragma once

#include <cstddef>
#include <string>

namespace ferry::protocol {

/// Bodies smaller than this are not worth keeping (plain allocation is cheap).
inline constexpr size_t kRecycledBodyMinBytes = 64 * 1024;
/// At most this many idle bodies are kept (bounds the memory they hold).
inline constexpr size_t kRecycledBodiesMax = 8;

/// A string of exactly `n` bytes whose contents are unspecified (a recycled body's
/// old bytes; zeroes where none was large enough): the caller overwrites them all.
std::string take_body_buffer(size_t n);

/// Hands back a body whose bytes are no longer needed; small ones, and any beyond
/// kRecycledBodiesMax, are freed.
void recycle_body_buffer(std::string&& body);

/// Idle bodies held now (for tests).
size_t idle_body_buffers();

}  // namespace ferry::protocol
