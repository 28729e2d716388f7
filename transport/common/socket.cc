#include "transport/common/socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

namespace poseidon::transport {

namespace {

constexpr auto kFirstRetryDelay = std::chrono::milliseconds(5);
constexpr auto kMaxRetryDelay = std::chrono::milliseconds(200);

// Milliseconds for poll(), rounded up so a wait never spins through its last millisecond.
int pollMillis(Deadline deadline) {
  if (deadline.isNever()) return -1;
  const auto ns = deadline.remaining().count();
  const long long ms = (ns + 999'999) / 1'000'000;
  return ms > 1'000'000 ? 1'000'000 : static_cast<int>(ms);
}

// Waits until fd is ready for `events` (or has an error/hang-up, which the next call reports).
// `progress` ends the timeout message: " (3 of 40 bytes received)".
Status waitReady(int fd, short events, Deadline deadline, const char* what, const std::string& peer,
                 const std::string& progress = "") {
  while (true) {
    if (deadline.expired()) {
      return makeStatus(StatusCode::kTimeout, "deadline passed while {} {}{}", what, peer, progress);
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

// resolve(), also reporting getaddrinfo's error code (0 on success) so callers can tell a name
// that may resolve later from one that never will.
Result<std::vector<SocketAddress>> resolveAll(const std::string& host, uint16_t port, bool passive, int* gai_error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* raw = nullptr;
  const std::string service = std::to_string(port);
  *gai_error = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &raw);
  if (*gai_error != 0) {
    return makeStatus(StatusCode::kInvalidArgument, "cannot resolve host '{}' (for {}): {}", host,
                      formatHostPort(host, port), ::gai_strerror(*gai_error));
  }
  const std::unique_ptr<addrinfo, AddrInfoDeleter> list(raw);
  std::vector<SocketAddress> addresses;
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress address;
    std::memcpy(&address.storage, ai->ai_addr, ai->ai_addrlen);
    address.length = ai->ai_addrlen;
    addresses.push_back(address);
  }
  if (addresses.empty()) {
    return makeStatus(StatusCode::kInvalidArgument, "host '{}' (for {}) resolved to no address", host,
                      formatHostPort(host, port));
  }
  return addresses;
}

// The address getsockname() or getpeername() reports for fd.
Result<SocketAddress> socketName(int fd, int (*call)(int, sockaddr*, socklen_t*), const char* name) {
  SocketAddress address;
  address.length = sizeof(address.storage);
  if (call(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return errnoStatus(StatusCode::kIoError, fmt::format("{}(fd {})", name, fd));
  }
  return address;
}

// Why one resolved address could not be used.
struct AddressFailure {
  std::string address;
  std::string cause;
};

// "connect to 10.0.0.1:5000: Connection refused" for the one address `where` names, else every
// address tried and its cause.
std::string describeFailures(const char* action, const std::string& where,
                             const std::vector<AddressFailure>& failures) {
  if (failures.size() == 1 && failures[0].address == where) {
    return fmt::format("{} {}: {}", action, where, failures[0].cause);
  }
  std::string out = fmt::format("{} {} failed at every address it resolved to:", action, where);
  for (size_t i = 0; i < failures.size(); ++i) {
    out += fmt::format("{} {}: {}", i == 0 ? "" : ";", failures[i].address, failures[i].cause);
  }
  return out;
}

// A non-blocking stream socket for address's family, or none with the reason in failures.
Fd socketFor(const SocketAddress& address, const std::string& target, std::vector<AddressFailure>& failures) {
  Fd fd(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) failures.push_back({target, fmt::format("socket(): {}", std::strerror(errno))});
  return fd;
}

bool isTransientConnectError(int err) {
  switch (err) {
    case ECONNREFUSED:  // nobody listens yet
    case ECONNRESET:    // the listener went away mid-handshake
    case ECONNABORTED:
    case ETIMEDOUT:    // SYNs unanswered: the host is still coming up
    case ENETUNREACH:  // routes or interfaces not up yet
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN:
    case EADDRNOTAVAIL:  // local ephemeral ports exhausted for now
      return true;
    default: return false;
  }
}

bool isTransientResolveError(int gai_error) {
  // A launcher may hand out a host name before its DNS record exists (e.g. a pod not yet ready).
  if (gai_error == EAI_AGAIN || gai_error == EAI_NONAME) return true;
#ifdef EAI_NODATA
  if (gai_error == EAI_NODATA) return true;
#endif
  return false;
}

// One connect attempt at every address host:port resolves to; *transient says whether a later
// attempt may succeed where this one failed.
Result<Fd> connectAttempt(const std::string& host, uint16_t port, Deadline deadline, bool* transient) {
  *transient = false;
  const std::string where = formatHostPort(host, port);
  int gai_error = 0;
  Result<std::vector<SocketAddress>> addresses = resolveAll(host, port, /*passive=*/false, &gai_error);
  if (!addresses) {
    *transient = isTransientResolveError(gai_error);
    return Status(StatusCode::kConnectionError, addresses.status().message());
  }
  std::vector<AddressFailure> failures;
  StatusCode code = StatusCode::kIoError;  // until a connect() itself fails
  for (const SocketAddress& address : *addresses) {
    const std::string target = address.toString();
    Fd fd = socketFor(address, target, failures);
    if (!fd.valid()) continue;
    int err = 0;
    if (::connect(fd.get(), address.data(), address.length) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        const std::string peer = target == where ? where : fmt::format("{} ({})", where, target);
        POSEIDON_RETURN_IF_ERROR(waitReady(fd.get(), POLLOUT, deadline, "connecting to", peer));
        socklen_t err_len = sizeof(err);
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &err_len) != 0) err = errno;
      }
    }
    if (err == 0) return fd;
    code = StatusCode::kConnectionError;
    *transient = *transient || isTransientConnectError(err);
    failures.push_back({target, std::strerror(err)});
  }
  return Status(code, describeFailures("connect to", where, failures));
}

}  // namespace

std::string SocketAddress::toString() const { return formatSockaddr(data(), length); }

uint16_t SocketAddress::port() const {
  if (storage.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

std::string formatHostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::string formatSockaddr(const sockaddr* addr, socklen_t len) {
  char host[NI_MAXHOST];
  char service[NI_MAXSERV];
  if (::getnameinfo(addr, len, host, sizeof(host), service, sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return fmt::format("<unknown address of family {}>", static_cast<int>(addr->sa_family));
  }
  return formatHostPort(host, static_cast<uint16_t>(std::atoi(service)));
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

Result<std::vector<SocketAddress>> resolve(const std::string& host, uint16_t port, bool passive) {
  int gai_error = 0;
  return resolveAll(host, port, passive, &gai_error);
}

Result<Fd> listenOn(const std::string& host, uint16_t port, int backlog) {
  const std::string where = formatHostPort(host.empty() ? "*" : host, port);
  Result<std::vector<SocketAddress>> addresses = resolve(host, port, /*passive=*/true);
  if (!addresses) return addresses.status();
  std::vector<AddressFailure> failures;
  for (const SocketAddress& address : *addresses) {
    const std::string target = address.toString();
    Fd fd = socketFor(address, target, failures);
    if (!fd.valid()) continue;
    // A restarted job must be able to take the port back while old connections sit in TIME_WAIT.
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), address.data(), address.length) != 0) {
      failures.push_back({target, fmt::format("bind(): {}", std::strerror(errno))});
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      failures.push_back({target, fmt::format("listen(): {}", std::strerror(errno))});
      continue;
    }
    return fd;
  }
  return Status(StatusCode::kIoError, describeFailures("listen on", where, failures));
}

Result<SocketAddress> localAddress(int fd) { return socketName(fd, ::getsockname, "getsockname"); }

Result<SocketAddress> peerAddress(int fd) { return socketName(fd, ::getpeername, "getpeername"); }

Result<Fd> connectOnce(const std::string& host, uint16_t port, Deadline deadline) {
  bool transient = false;
  return connectAttempt(host, port, deadline, &transient);
}

Result<Fd> connectWithRetry(const std::string& host, uint16_t port, Deadline deadline) {
  auto delay = std::chrono::duration_cast<std::chrono::nanoseconds>(kFirstRetryDelay);
  Status last;  // the last failure that was not the deadline itself
  for (int attempt = 1;; ++attempt) {
    bool transient = false;
    Result<Fd> fd = connectAttempt(host, port, deadline, &transient);
    if (fd) return fd;
    const bool timed_out = fd.status().code() == StatusCode::kTimeout;
    if (!transient && !timed_out) return fd.status();
    if (!timed_out) last = fd.status();
    if (timed_out || deadline.expired()) {
      // An attempt cut short by the deadline says less than the refusal before it.
      const Status& cause = last.isOk() ? fd.status() : last;
      return makeStatus(cause.code(), "could not connect to {} before the deadline ({} attempt{}); last error: {}",
                        formatHostPort(host, port), attempt, attempt == 1 ? "" : "s", cause.message());
    }
    // The peer may not be listening yet: back off and try again.
    std::this_thread::sleep_for(std::min(delay, deadline.remaining()));
    delay = std::min<std::chrono::nanoseconds>(delay * 2, kMaxRetryDelay);
  }
}

Status setNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0) return errnoStatus(StatusCode::kIoError, fmt::format("fcntl(fd {}, F_GETFL)", fd));
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd, F_SETFL, flags) != 0) {
    return errnoStatus(StatusCode::kIoError, fmt::format("fcntl(fd {}, F_SETFL, {}O_NONBLOCK)", fd, on ? "" : "~"));
  }
  return Status::ok();
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
  const auto* bytes = static_cast<const uint8_t*>(data);
  size_t sent = 0;
  while (sent < length) {
    const ssize_t n = ::send(fd, bytes + sent, length - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      POSEIDON_RETURN_IF_ERROR(
          waitReady(fd, POLLOUT, deadline, "sending to", peer, fmt::format(" ({} of {} bytes sent)", sent, length)));
    } else if (n < 0 && errno != EINTR) {
      return errnoStatus(StatusCode::kConnectionError,
                         fmt::format("sending to {} ({} of {} bytes sent)", peer, sent, length));
    }
  }
  return Status::ok();
}

Status recvAll(int fd, void* data, size_t length, Deadline deadline, const std::string& peer) {
  auto* bytes = static_cast<uint8_t*>(data);
  size_t got = 0;
  while (got < length) {
    const ssize_t n = ::recv(fd, bytes + got, length - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      return makeStatus(StatusCode::kConnectionError, "{} closed the connection ({} of {} bytes received)", peer, got,
                        length);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      POSEIDON_RETURN_IF_ERROR(waitReady(fd, POLLIN, deadline, "receiving from", peer,
                                         fmt::format(" ({} of {} bytes received)", got, length)));
    } else if (errno != EINTR) {
      return errnoStatus(StatusCode::kConnectionError,
                         fmt::format("receiving from {} ({} of {} bytes received)", peer, got, length));
    }
  }
  return Status::ok();
}

}  // namespace poseidon::transport
