// Socket helpers for the TCP backend: an owning fd, addresses, and deadline-bounded I/O used
// during connection set-up (the data path is non-blocking and driven by the progress engine).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "transport/deadline.h"
#include "transport/status.h"

namespace poseidon::transport::tcp {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string toString() const;  // "127.0.0.1:5000" or "[::1]:5000"
  uint16_t port() const;
};

// Resolves "host" + port (numeric addresses or names) to the first usable address.
Result<SocketAddress> resolve(const std::string& host, uint16_t port);
// Splits "host:port" or "[v6]:port", naming the input when it does not parse.
Result<std::pair<std::string, uint16_t>> splitHostPort(const std::string& text);

Result<Fd> listenOn(const SocketAddress& address, int backlog);
Result<SocketAddress> localAddress(int fd);
Result<SocketAddress> peerAddress(int fd);
// Connects, retrying refused connections until the deadline (the peer may not listen yet).
Result<Fd> connectWithRetry(const SocketAddress& address, Deadline deadline);

Status setNonBlocking(int fd, bool on);
// TCP_NODELAY, keepalive, and buffer sizes (0 keeps kernel autotuning).
Status configureDataSocket(int fd, int buffer_bytes);

// Blocking I/O bounded by a deadline, for handshakes; the fd may be blocking or not.
Status sendAll(int fd, const void* data, size_t length, Deadline deadline, const std::string& peer);
Status recvAll(int fd, void* data, size_t length, Deadline deadline, const std::string& peer);

}  // namespace poseidon::transport::tcp
