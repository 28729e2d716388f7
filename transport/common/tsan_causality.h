// Happens-before that travels through sockets, told to ThreadSanitizer.
//
// TSan's socket interceptors order every send before every later receive (one sync object for
// all sockets), but its sendmsg records the call's reads of the sender's memory when the call
// returns. On loopback the kernel has passed the bytes on by then: a ring rank sends a piece of
// its buffer, the piece goes round the other ranks (all in one test process) and comes back
// summed into the same bytes, and with 2 cores and the sender preempted after the call, that
// landing's write comes before the read TSan records, unordered: a race the program does not
// have (seen in the ring tests, SessionEquivalence ring_merged among them).
//
// So the TCP stream does the interceptor's work itself, in the right order: the bytes a sendmsg
// offers are read (as far as TSan knows) before the call, then released; the call goes past the
// interceptor; every receive acquires first. Memory written outside the transport, and a send
// whose memory the caller reuses before it completes, are still checked. No-ops outside TSan
// builds.
#pragma once

#include <sys/socket.h>

#include "common/sanitizers.h"

#if POSEIDON_UNDER_TSAN
#include <sys/syscall.h>
#include <unistd.h>

extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
extern "C" void __tsan_read_range(void* addr, unsigned long size);
#endif

namespace poseidon::transport {

#if POSEIDON_UNDER_TSAN
// The sync object: its address, one for every stream, as TSan has one for every socket.
inline char g_socket_bytes;
// Before sendmsg: the bytes it offers are read now, and whatever this thread did before is
// released to whoever receives them.
inline void bytesOffered(const msghdr& msg) {
  for (size_t i = 0; i < msg.msg_iovlen; ++i) __tsan_read_range(msg.msg_iov[i].iov_base, msg.msg_iov[i].iov_len);
  __tsan_release(&g_socket_bytes);
}
// sendmsg past TSan's interceptor, which would record the reads again after the call.
inline ssize_t sendmsgOffered(int fd, const msghdr& msg, int flags) { return ::syscall(SYS_sendmsg, fd, &msg, flags); }
// recv that first acquires what every sender released before offering its bytes.
inline ssize_t recvOrdered(int fd, void* buffer, size_t length, int flags) {
  __tsan_acquire(&g_socket_bytes);
  return ::recv(fd, buffer, length, flags);
}
#else
inline void bytesOffered(const msghdr&) {}
inline ssize_t sendmsgOffered(int fd, const msghdr& msg, int flags) { return ::sendmsg(fd, &msg, flags); }
inline ssize_t recvOrdered(int fd, void* buffer, size_t length, int flags) { return ::recv(fd, buffer, length, flags); }
#endif

}  // namespace poseidon::transport
