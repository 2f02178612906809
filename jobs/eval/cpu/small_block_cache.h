// The eval's CPU allocator for libtorch's small blocks (issue 45): a forward of a tiny
// model makes ~300 tensor allocations (norms, projections, attention's scores), each a
// posix_memalign and a free through glibc, ~15 % of its time. This allocator keeps the
// blocks of up to kSmallBlockBytes that are freed in free lists by power-of-two size, so
// the next forward takes them back at the cost of a lock; larger blocks, and any block
// past a cache of kSmallBlockCacheBytes, go to libtorch's own allocator as before.
// Installed once for the process (c10::SetCPUAllocator) by use_small_block_cache(); a
// tensor keeps the deleter it was allocated with, so installing it at any time is safe.
// Blocks are 64-byte aligned, as libtorch's; the profiler's memory reporting (which
// eval_bench counts) sees every allocation and free. Any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::eval {

inline constexpr size_t kSmallBlockBytes = 64 * 1024;
inline constexpr size_t kSmallBlockCacheBytes = 4 * 1024 * 1024;

/// Makes the small-block cache libtorch's CPU allocator (once; later calls do nothing).
void use_small_block_cache();

/// Bytes held in the free lists now (for tests).
size_t small_block_cache_bytes();

}  // namespace ferry::eval
