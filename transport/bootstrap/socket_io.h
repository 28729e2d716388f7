// Blocking-with-deadline socket helpers for the bootstrap store (client side and listener set-up).
//
// Everything here is bounded by a Deadline and reports the peer it talked to, so a store call
// can never hang on a dead or silent rank 0. Sockets are non-blocking; waits go through poll().
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "transport/deadline.h"
#include "transport/status.h"

namespace poseidon::transport::bootstrap {

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// "10.0.0.1:5000", "[fe80::1]:5000": the form users write and logs show.
std::string formatHostPort(const std::string& host, uint16_t port);
// Numeric address of a socket address, formatted as above.
std::string formatSockaddr(const sockaddr* addr, socklen_t len);

// One attempt to connect to host:port (every resolved address in turn) before the deadline.
// kConnectionError names the address and the cause. The socket is non-blocking with TCP_NODELAY.
Result<UniqueFd> connectOnce(const std::string& host, uint16_t port, Deadline deadline);

// A non-blocking socket bound to host:port and listening; "" binds every interface, port 0 an
// ephemeral port.
Result<UniqueFd> listenOn(const std::string& host, uint16_t port);

// Send or receive exactly `size` bytes before the deadline. kTimeout when it passes,
// kConnectionError when the peer closes or resets. Messages name `peer`.
Status sendAll(int fd, const uint8_t* data, size_t size, Deadline deadline, const std::string& peer);
Status recvAll(int fd, uint8_t* data, size_t size, Deadline deadline, const std::string& peer);

}  // namespace poseidon::transport::bootstrap
