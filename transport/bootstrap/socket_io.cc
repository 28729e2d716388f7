#include "transport/bootstrap/socket_io.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace poseidon::transport::bootstrap {

namespace {

constexpr int kKeepIdleSeconds = 10;
constexpr int kKeepIntervalSeconds = 5;
constexpr int kKeepCount = 3;

// Milliseconds for poll(), rounded up so a wait never spins through its last millisecond.
int pollMillis(Deadline deadline) {
  if (deadline.isNever()) return -1;
  const auto ns = deadline.remaining().count();
  const long long ms = (ns + 999'999) / 1'000'000;
  return ms > 1'000'000 ? 1'000'000 : static_cast<int>(ms);
}

// Waits until fd is ready for `events` (or has an error/hang-up, which the next call reports).
Status waitReady(int fd, short events, Deadline deadline, const std::string& peer, const char* what) {
  while (true) {
    if (deadline.expired()) {
      return makeStatus(StatusCode::kTimeout, "deadline passed while {} {}", what, peer);
    }
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, pollMillis(deadline));
    if (n > 0) return Status::ok();
    if (n < 0 && errno != EINTR) return errnoStatus(StatusCode::kIoError, fmt::format("poll() {} {}", what, peer));
  }
}

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

Result<AddrInfoList> resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    return makeStatus(StatusCode::kConnectionError, "cannot resolve {}: {}", formatHostPort(host, port),
                      ::gai_strerror(rc));
  }
  return AddrInfoList(list);
}

Status statusFromErrno(StatusCode code, int err, const std::string& what) {
  errno = err;
  return errnoStatus(code, what);
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string formatHostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::string formatSockaddr(const sockaddr* addr, socklen_t len) {
  char host[NI_MAXHOST];
  char service[NI_MAXSERV];
  if (::getnameinfo(addr, len, host, sizeof(host), service, sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "<unknown address>";
  }
  return formatHostPort(host, static_cast<uint16_t>(std::atoi(service)));
}

Result<UniqueFd> connectOnce(const std::string& host, uint16_t port, Deadline deadline) {
  const std::string where = formatHostPort(host, port);
  Result<AddrInfoList> list = resolve(host, port, /*passive=*/false);
  if (!list) return list.status();
  Status last = makeStatus(StatusCode::kConnectionError, "{} resolved to no address", where);
  for (const addrinfo* ai = list->get(); ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = errnoStatus(StatusCode::kIoError, fmt::format("socket() for {}", where));
      continue;
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = errnoStatus(StatusCode::kConnectionError, fmt::format("connect to {}", where));
        continue;
      }
      Status ready = waitReady(fd.get(), POLLOUT, deadline, where, "connecting to");
      if (!ready) return ready;
      int err = 0;
      socklen_t err_len = sizeof(err);
      if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &err_len) != 0) err = errno;
      if (err != 0) {
        last = statusFromErrno(StatusCode::kConnectionError, err, fmt::format("connect to {}", where));
        continue;
      }
    }
    // Requests are small and answered one at a time: Nagle would only add latency.
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // A peer host that vanishes sends no FIN; keepalive turns that into an error within about
    // kKeepIdle + kKeepCount * kKeepInterval seconds, even for a wait without a deadline.
    ::setsockopt(fd.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPIDLE, &kKeepIdleSeconds, sizeof(kKeepIdleSeconds));
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPINTVL, &kKeepIntervalSeconds, sizeof(kKeepIntervalSeconds));
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPCNT, &kKeepCount, sizeof(kKeepCount));
    return fd;
  }
  return last;
}

Result<UniqueFd> listenOn(const std::string& host, uint16_t port) {
  const std::string where = formatHostPort(host.empty() ? "*" : host, port);
  Result<AddrInfoList> list = resolve(host, port, /*passive=*/true);
  if (!list) return list.status();
  Status last = makeStatus(StatusCode::kIoError, "{} resolved to no address", where);
  for (const addrinfo* ai = list->get(); ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = errnoStatus(StatusCode::kIoError, fmt::format("socket() for {}", where));
      continue;
    }
    // A restarted job must be able to take the port back while old connections sit in TIME_WAIT.
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = errnoStatus(StatusCode::kIoError, fmt::format("bind to {}", where));
      continue;
    }
    if (::listen(fd.get(), SOMAXCONN) != 0) {
      last = errnoStatus(StatusCode::kIoError, fmt::format("listen on {}", where));
      continue;
    }
    return fd;
  }
  return last;
}

Status sendAll(int fd, const uint8_t* data, size_t size, Deadline deadline, const std::string& peer) {
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      POSEIDON_RETURN_IF_ERROR(waitReady(fd, POLLOUT, deadline, peer, "sending to"));
    } else if (n < 0 && errno != EINTR) {
      return errnoStatus(StatusCode::kConnectionError, fmt::format("sending to {}", peer));
    }
  }
  return Status::ok();
}

Status recvAll(int fd, uint8_t* data, size_t size, Deadline deadline, const std::string& peer) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::recv(fd, data + got, size - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      return makeStatus(StatusCode::kConnectionError, "{} closed the connection", peer);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      POSEIDON_RETURN_IF_ERROR(waitReady(fd, POLLIN, deadline, peer, "receiving from"));
    } else if (errno != EINTR) {
      return errnoStatus(StatusCode::kConnectionError, fmt::format("receiving from {}", peer));
    }
  }
  return Status::ok();
}

}  // namespace poseidon::transport::bootstrap
