// Happens-before that travels through sockets, told to ThreadSanitizer.
//
// TSan orders threads by the locks and atomics it sees, not by bytes through the kernel. A ring
// rank sends a piece of its buffer; the piece goes round the other ranks and comes back summed,
// and the engine thread writes it into the same bytes: only the network orders that write after
// the send, so TSan (all ranks in one test process) reports the sendmsg's read and the landing's
// write as a race. The model: when a frame's bytes are offered to the kernel, the sender releases
// the region they come from; whoever lands bytes in a region acquires it first. Per region, so a
// landing is ordered only after sends from that same region; memory written outside the
// transport is still checked.
//
// The offer is told before sendmsg, not after: TSan's own sendmsg interceptor records the call's
// reads when it returns, and on loopback the kernel has passed the bytes on by then. With 2 cores
// and a preempted sender, the piece went round the ring and landed back in the same bytes before
// the interceptor recorded the read (seen: SessionEquivalence ring_merged), a race the program
// does not have. So under TSan the reads are recorded and the regions released first, and the
// call goes past the interceptor. No-ops outside TSan builds.
#pragma once

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/memory.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
extern "C" void __tsan_read_range(void* addr, unsigned long size);
#endif

namespace poseidon::transport {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kTrackSocketCausality = true;
inline void regionBytesSent(const MemoryRegion* region) { __tsan_release(const_cast<MemoryRegion*>(region)); }
inline void regionBytesLanding(const MemoryRegion* region) { __tsan_acquire(const_cast<MemoryRegion*>(region)); }
// The bytes a sendmsg is about to offer the kernel: read now, as far as TSan knows. Before the
// regions they come from are released (regionBytesSent), so the release covers the reads.
inline void bytesOffered(const msghdr& msg) {
  for (size_t i = 0; i < msg.msg_iovlen; ++i) __tsan_read_range(msg.msg_iov[i].iov_base, msg.msg_iov[i].iov_len);
}
// sendmsg past TSan's interceptor, which would record the reads again after the call.
inline ssize_t sendmsgOffered(int fd, const msghdr& msg, int flags) { return ::syscall(SYS_sendmsg, fd, &msg, flags); }
#else
inline constexpr bool kTrackSocketCausality = false;
inline void regionBytesSent(const MemoryRegion*) {}
inline void regionBytesLanding(const MemoryRegion*) {}
inline void bytesOffered(const msghdr&) {}
inline ssize_t sendmsgOffered(int fd, const msghdr& msg, int flags) { return ::sendmsg(fd, &msg, flags); }
#endif

}  // namespace poseidon::transport
