// Inside the pack / unpack CPU twin: copying a converted block from L1 to its destination with
// non-temporal stores, so a large output is written once, never read first (no read-for-
// ownership), and does not evict the caller's working set, as memcpy does for large copies.
#pragma once

#include <cstddef>

namespace poseidon::kernels::cpu {

// Copies `bytes` from `from` to `to`; the aligned middle of `to` with the widest streaming store
// the CPU has (64 bytes with AVX-512: a whole line at once, which the write-combining buffers
// need to stream at full rate). A series of these ends with streamFence().
void streamCopy(const void* from, void* to, size_t bytes);

// Orders the streamed stores before whatever the caller does next (a send reading the buffer).
void streamFence();

}  // namespace poseidon::kernels::cpu
