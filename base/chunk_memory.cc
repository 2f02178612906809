#include "base/chunk_memory.h"

#include <malloc.h>

namespace ferry {

void keep_chunk_buffers_warm() {
  constexpr int kMmapThresholdBytes = 32 << 20;  // glibc's maximum; chunks are ≤ 32 MiB
  constexpr int kTrimThresholdBytes = 64 << 20;  // give memory back only past this much free
  ::mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  ::mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes);
}

}  // namespace ferry
