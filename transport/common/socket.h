// Socket helpers shared by the TCP backend and the bootstrap store: an owning fd, addresses,
// resolution, connecting and listening, and deadline-bounded blocking I/O for handshakes and
// store requests (the TCP data path is non-blocking and driven by the progress engine).
//
// Everything that waits takes a Deadline, and every failure names the address or peer involved,
// so a set-up step can never hang on a dead or silent peer and always says which one it was.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/common/fd.h"

namespace poseidon::transport {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* data() const { return reinterpret_cast<const sockaddr*>(&storage); }
  std::string toString() const;  // "127.0.0.1:5000" or "[::1]:5000", as formatSockaddr
  uint16_t port() const;         // 0 for a family without ports
};

// "10.0.0.1:5000", "[fe80::1]:5000": the form users write and logs show.
std::string formatHostPort(const std::string& host, uint16_t port);
// Numeric address of a socket address, formatted as above.
std::string formatSockaddr(const sockaddr* addr, socklen_t len);
// Splits "host:port" or "[v6]:port", naming the input when it does not parse.
Result<std::pair<std::string, uint16_t>> splitHostPort(const std::string& text);

// Every address host:port resolves to, in the order to try them. "" is the loopback address, or
// with `passive` every interface (for listening). kInvalidArgument names host, port and cause.
Result<std::vector<SocketAddress>> resolve(const std::string& host, uint16_t port, bool passive = false);

// A non-blocking socket bound to host:port (each resolved address in turn) and listening; ""
// binds every interface, port 0 an ephemeral port (see localAddress).
Result<Fd> listenOn(const std::string& host, uint16_t port, int backlog = SOMAXCONN);
Result<SocketAddress> localAddress(int fd);
Result<SocketAddress> peerAddress(int fd);

// One attempt to connect to host:port before the deadline, trying every resolved address in
// turn. The socket is non-blocking, with no options set. kConnectionError names the address and
// the cause for each address tried (a name that does not resolve is one too); kTimeout when the
// deadline passes while connecting.
Result<Fd> connectOnce(const std::string& host, uint16_t port, Deadline deadline);
// As connectOnce, retrying with backoff until the deadline while the peer is not there yet
// (refused, unreachable, reset, the name does not resolve yet); other failures return at once.
// At the deadline: "could not connect to host:port before the deadline (N attempts); last
// error: ...", with the code of the last failure.
Result<Fd> connectWithRetry(const std::string& host, uint16_t port, Deadline deadline);

Status setNonBlocking(int fd, bool on);
// TCP_NODELAY, keepalive, and buffer sizes (0 keeps kernel autotuning).
Status configureDataSocket(int fd, int buffer_bytes);

// Send or receive exactly `length` bytes before the deadline; the fd may be blocking or not.
// kTimeout when the deadline passes, kConnectionError when the peer closes or resets. Messages
// name `peer` and how many of the bytes got through.
Status sendAll(int fd, const void* data, size_t length, Deadline deadline, const std::string& peer);
Status recvAll(int fd, void* data, size_t length, Deadline deadline, const std::string& peer);

}  // namespace poseidon::transport
