// keep_chunk_buffers_warm(): process-wide malloc settings for programs that move
// files in multi-MiB chunks (the coordinator relaying, the agent serving).
//
// Why: glibc serves a 2 MiB allocation with mmap and gives the heap's top back to
// the kernel on free, so each chunk buffer arrived in fresh pages and every page
// faulted again — measured on the testbed VM, page faults and the first touch of
// those pages were most of the agents' CPU time while relaying. With a fixed mmap
// threshold above the largest chunk and a high trim threshold the freed buffers
// stay mapped and the next chunk reuses them. The price: up to 64 MiB of freed
// heap per malloc arena is kept rather than returned, so RSS stays near its peak
// (the chunks alive at once, which the callers bound) instead of dropping after.
//
// Call once, early in main(), before threads start.
#pragma once

namespace ferry {

void keep_chunk_buffers_warm();

}  // namespace ferry
