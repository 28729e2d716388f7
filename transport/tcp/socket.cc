#include "transport/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

namespace poseidon::transport::tcp {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (storage.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "<unknown address family>";
}

uint16_t SocketAddress::port() const {
  if (storage.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

Result<std::pair<std::string, uint16_t>> splitHostPort(const std::string& text) {
  std::string host;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return makeStatus(StatusCode::kInvalidArgument, "address '{}' is not of the form [ipv6]:port", text);
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return makeStatus(StatusCode::kInvalidArgument, "address '{}' is not of the form host:port", text);
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535 || port_text.empty()) {
    return makeStatus(StatusCode::kInvalidArgument, "port '{}' in address '{}' is not an integer in [0, 65535]",
                      port_text, text);
  }
  return std::make_pair(host, static_cast<uint16_t>(port));
}

Result<SocketAddress> resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    return makeStatus(StatusCode::kInvalidArgument, "cannot resolve host '{}': {}", host, gai_strerror(rc));
  }
  SocketAddress address;
  std::memcpy(&address.storage, result->ai_addr, result->ai_addrlen);
  address.length = result->ai_addrlen;
  freeaddrinfo(result);
  return address;
}

Result<Fd> listenOn(const SocketAddress& address, int backlog) {
  Fd fd(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errnoStatus(StatusCode::kIoError, "socket()");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    return errnoStatus(StatusCode::kIoError, "bind to " + address.toString());
  }
  if (::listen(fd.get(), backlog) != 0) return errnoStatus(StatusCode::kIoError, "listen on " + address.toString());
  return fd;
}

Result<SocketAddress> localAddress(int fd) {
  SocketAddress address;
  address.length = sizeof(address.storage);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return errnoStatus(StatusCode::kIoError, "getsockname");
  }
  return address;
}

Result<SocketAddress> peerAddress(int fd) {
  SocketAddress address;
  address.length = sizeof(address.storage);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return errnoStatus(StatusCode::kIoError, "getpeername");
  }
  return address;
}

Status setNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0) return errnoStatus(StatusCode::kIoError, "fcntl(F_GETFL)");
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd, F_SETFL, flags) != 0) return errnoStatus(StatusCode::kIoError, "fcntl(F_SETFL)");
  return Status::ok();
}

namespace {
// Waits until fd is ready for `events` or the deadline passes.
Status pollFor(int fd, short events, Deadline deadline, const char* what, const std::string& peer) {
  while (true) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, deadline.remainingMillisForPoll());
    if (rc > 0) return Status::ok();
    if (rc == 0) return makeStatus(StatusCode::kTimeout, "timed out {} {}", what, peer);
    if (errno != EINTR) return errnoStatus(StatusCode::kIoError, std::string("poll while ") + what + " " + peer);
  }
}
}  // namespace

Result<Fd> connectWithRetry(const SocketAddress& address, Deadline deadline) {
  auto backoff = std::chrono::milliseconds(5);
  while (true) {
    Fd fd(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return errnoStatus(StatusCode::kIoError, "socket()");
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      Status st = pollFor(fd.get(), POLLOUT, deadline, "connecting to", address.toString());
      if (!st.isOk()) return st;
      socklen_t len = sizeof(err);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      POSEIDON_RETURN_IF_ERROR(setNonBlocking(fd.get(), false));
      return fd;
    }
    const bool retryable = err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH || err == EHOSTUNREACH;
    if (!retryable || deadline.remaining() < backoff) {
      return makeStatus(StatusCode::kConnectionError, "cannot connect to {}: {}", address.toString(),
                        std::strerror(err));
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

Status configureDataSocket(int fd, int buffer_bytes) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return errnoStatus(StatusCode::kIoError, "setsockopt(TCP_NODELAY)");
  }
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  if (buffer_bytes > 0) {
    if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes)) != 0 ||
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes)) != 0) {
      return errnoStatus(StatusCode::kIoError, "setsockopt(SO_SNDBUF/SO_RCVBUF " + std::to_string(buffer_bytes) + ")");
    }
  }
  return Status::ok();
}

Status sendAll(int fd, const void* data, size_t length, Deadline deadline, const std::string& peer) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (length > 0) {
    POSEIDON_RETURN_IF_ERROR(pollFor(fd, POLLOUT, deadline, "sending to", peer));
    const ssize_t n = ::send(fd, p, length, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errnoStatus(StatusCode::kConnectionError, "send to " + peer);
    }
    p += n;
    length -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status recvAll(int fd, void* data, size_t length, Deadline deadline, const std::string& peer) {
  auto* p = static_cast<uint8_t*>(data);
  while (length > 0) {
    POSEIDON_RETURN_IF_ERROR(pollFor(fd, POLLIN, deadline, "receiving from", peer));
    const ssize_t n = ::recv(fd, p, length, MSG_DONTWAIT);
    if (n == 0) return makeStatus(StatusCode::kConnectionError, "{} closed the connection", peer);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errnoStatus(StatusCode::kConnectionError, "recv from " + peer);
    }
    p += n;
    length -= static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace poseidon::transport::tcp
