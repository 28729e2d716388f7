// Happens-before that travels through sockets, told to ThreadSanitizer.
//
// TSan orders threads by the locks and atomics it sees, not by bytes through the kernel. A ring
// rank sends a piece of its buffer; the piece goes round the other ranks and comes back summed,
// and the engine thread writes it into the same bytes: only the network orders that write after
// the send, so TSan (all ranks in one test process) reports the sendmsg's read and the landing's
// write as a race. The model: once the kernel has taken a frame's bytes, the sender releases the
// region they came from; whoever lands bytes in a region acquires it first. Per region, so a
// landing is ordered only after sends from that same region that had completed; a send still in
// flight, or memory written outside the transport, is still checked. No-ops outside TSan builds.
#pragma once

#include "transport/memory.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace poseidon::transport {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kTrackSocketCausality = true;
inline void regionBytesSent(const MemoryRegion* region) { __tsan_release(const_cast<MemoryRegion*>(region)); }
inline void regionBytesLanding(const MemoryRegion* region) { __tsan_acquire(const_cast<MemoryRegion*>(region)); }
#else
inline constexpr bool kTrackSocketCausality = false;
inline void regionBytesSent(const MemoryRegion*) {}
inline void regionBytesLanding(const MemoryRegion*) {}
#endif

}  // namespace poseidon::transport
