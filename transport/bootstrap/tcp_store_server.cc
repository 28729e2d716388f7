#include "transport/bootstrap/tcp_store_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <unordered_map>
#include <vector>

#include "common/deadline.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_protocol.h"
#include "transport/common/socket.h"

namespace poseidon::transport::bootstrap {

namespace {

// epoll tokens: the listener and the stop event, then one per client, never reused, so a
// stale event for a client closed earlier in the same batch finds nothing.
constexpr uint64_t kListenToken = 0;
constexpr uint64_t kWakeToken = 1;
constexpr uint64_t kFirstClientToken = 2;
constexpr int kMaxEvents = 64;
// Reads per readiness event, so one client uploading a large value does not starve the rest.
constexpr int kMaxReadsPerEvent = 16;
// A body buffer grows with the bytes that actually arrived, never straight to the size a header
// claims: a thousand clients each announcing 64 MiB and sending nothing cost nothing.
constexpr size_t kFirstBodyChunk = 64 << 10;
// When accept() fails for lack of descriptors the listener stays readable; pausing it keeps the
// loop from spinning while connections close.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

// A client is always in exactly one phase; it sends its next request only after our response.
enum class Phase {
  kHeader,   // reading the fixed request header
  kBody,     // reading key and value, sized from the validated header
  kParked,   // a get() of a key not set yet; answered from wakeWaiters()
  kWriting,  // the response did not fit in the socket buffer; waiting for EPOLLOUT
};

struct Client {
  uint64_t token = 0;
  Fd fd;
  std::string peer;
  Phase phase = Phase::kHeader;
  uint32_t interest = 0;
  bool closing = false;
  std::array<uint8_t, kRequestHeaderBytes> header_bytes{};
  size_t header_got = 0;
  RequestHeader header;
  std::vector<uint8_t> body;  // holds body_got bytes received; grows towards body_expected
  size_t body_got = 0;
  size_t body_expected = 0;
  size_t reserved = 0;  // bytes of a set() in flight, counted against max_total_bytes
  std::string parked_key;
  std::vector<uint8_t> out;
  size_t out_sent = 0;
};

}  // namespace

class TcpStoreServer::Loop {
 public:
  Loop(Fd listen_fd, Fd epoll_fd, Fd wake_fd, std::string address, TcpStoreServerOptions options)
      : listen_fd_(std::move(listen_fd)),
        epoll_fd_(std::move(epoll_fd)),
        wake_fd_(std::move(wake_fd)),
        address_(std::move(address)),
        options_(options) {}

  void run();
  // Any thread: asks run() to return; it closes every connection on the way out.
  void stop() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
  }

 private:
  void acceptAll();
  void onEvent(Client& c, uint32_t events);
  void readRequest(Client& c);
  void onHeader(Client& c);
  void handleRequest(Client& c);
  Result<int64_t> applyAdd(const std::string& key, int64_t delta);
  void storeValue(const std::string& key, std::vector<uint8_t> value);
  void wakeWaiters(const std::string& key);
  void park(Client& c, const std::string& key);
  void respond(Client& c, std::vector<uint8_t> bytes);
  void flush(Client& c);
  void setInterest(Client& c, uint32_t events);
  // The client broke the protocol: log why, tell it (best effort) and close.
  void reject(Client& c, const Status& why);
  // The connection ended or failed; `expected` ones (a clean close) are logged at debug level.
  void disconnect(Client& c, const std::string& why, bool expected);
  void closeClient(Client& c);
  void pauseAccept();

  Fd listen_fd_;
  Fd epoll_fd_;
  Fd wake_fd_;
  const std::string address_;
  const TcpStoreServerOptions options_;

  std::unordered_map<uint64_t, std::unique_ptr<Client>> clients_;
  std::vector<uint64_t> closed_;  // erased after the event batch, so references stay valid
  uint64_t next_token_ = kFirstClientToken;
  std::unordered_map<std::string, std::vector<uint8_t>> values_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_;  // key -> parked clients
  size_t total_bytes_ = 0;     // keys and values held, checked against max_total_bytes
  size_t reserved_bytes_ = 0;  // set() bodies still arriving, checked likewise
  bool accept_paused_ = false;
  Clock::time_point accept_resume_at_;
};

void TcpStoreServer::Loop::run() {
  std::array<epoll_event, kMaxEvents> events{};
  bool stopping = false;
  while (!stopping) {
    int timeout_ms = -1;
    if (accept_paused_) {
      if (Clock::now() >= accept_resume_at_) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = kListenToken;
        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, listen_fd_.get(), &ev);
        accept_paused_ = false;
      } else {
        timeout_ms = static_cast<int>(kAcceptPause.count());
      }
    }
    const int n = ::epoll_wait(epoll_fd_.get(), events.data(), kMaxEvents, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("TCP store {}: epoll_wait failed: {}; closing every connection", address_,
                    errnoStatus(StatusCode::kIoError, "epoll_wait").message());
      break;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t token = events[i].data.u64;
      if (token == kListenToken) {
        acceptAll();
      } else if (token == kWakeToken) {
        stopping = true;
      } else if (auto it = clients_.find(token); it != clients_.end() && !it->second->closing) {
        Client& c = *it->second;
        try {
          onEvent(c, events[i].events);
        } catch (const std::exception& e) {  // e.g. bad_alloc for a large value: lose the client, not the job
          reject(c, makeStatus(StatusCode::kInternal, "failed to serve request: {}", e.what()));
        }
      }
    }
    for (uint64_t token : closed_) clients_.erase(token);
    closed_.clear();
  }
  spdlog::debug("TCP store {}: stopping, closing {} connections", address_, clients_.size());
  waiters_.clear();
  clients_.clear();
  listen_fd_.reset();
}

void TcpStoreServer::Loop::acceptAll() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = ::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      spdlog::warn("TCP store {}: {}; pausing new connections for {} ms", address_,
                   errnoStatus(StatusCode::kIoError, "accept").message(), kAcceptPause.count());
      pauseAccept();
      return;
    }
    Fd owned(fd);
    std::string peer = formatSockaddr(reinterpret_cast<sockaddr*>(&addr), len);
    if (clients_.size() >= options_.max_clients) {
      spdlog::warn("TCP store {}: refusing connection from {}: {} clients connected, limit {}", address_, peer,
                   clients_.size(), options_.max_clients);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto client = std::make_unique<Client>();
    client->token = next_token_++;
    client->fd = std::move(owned);
    client->peer = std::move(peer);
    client->interest = EPOLLIN | EPOLLRDHUP;
    epoll_event ev{};
    ev.events = client->interest;
    ev.data.u64 = client->token;
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      spdlog::warn("TCP store {}: dropping connection from {}: {}", address_, client->peer,
                   errnoStatus(StatusCode::kIoError, "epoll_ctl(ADD)").message());
      continue;
    }
    spdlog::debug("TCP store {}: {} connected", address_, client->peer);
    clients_.emplace(client->token, std::move(client));
  }
}

void TcpStoreServer::Loop::pauseAccept() {
  epoll_event ev{};
  ev.data.u64 = kListenToken;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, listen_fd_.get(), &ev);
  accept_paused_ = true;
  accept_resume_at_ = Clock::now() + kAcceptPause;
}

void TcpStoreServer::Loop::onEvent(Client& c, uint32_t events) {
  switch (c.phase) {
    case Phase::kHeader:
    case Phase::kBody:
      // recv() reports data, end of stream and socket errors alike.
      readRequest(c);
      break;
    case Phase::kParked:
      // Only hang-ups are watched while parked: the client gave up (its deadline passed) or died.
      disconnect(c, fmt::format("disconnected while waiting for key {}", describeKey(c.parked_key)),
                 /*expected=*/true);
      break;
    case Phase::kWriting:
      if (events & EPOLLOUT) {
        flush(c);
      } else {
        disconnect(c, "hung up before reading its response", /*expected=*/true);
      }
      break;
  }
}

void TcpStoreServer::Loop::readRequest(Client& c) {
  for (int i = 0; i < kMaxReadsPerEvent && !c.closing; ++i) {
    uint8_t* dst = nullptr;
    size_t want = 0;
    if (c.phase == Phase::kHeader) {
      dst = c.header_bytes.data() + c.header_got;
      want = kRequestHeaderBytes - c.header_got;
    } else if (c.phase == Phase::kBody) {
      if (c.body.size() == c.body_got) {
        c.body.resize(std::min(c.body_expected, std::max(2 * c.body.size(), kFirstBodyChunk)));
      }
      dst = c.body.data() + c.body_got;
      want = c.body.size() - c.body_got;
    } else {
      return;  // a request is being answered; the next one is read after the response
    }
    const ssize_t n = ::recv(c.fd.get(), dst, want, 0);
    if (n == 0) {
      if (c.phase == Phase::kHeader && c.header_got == 0) {
        disconnect(c, "disconnected", /*expected=*/true);
      } else {
        disconnect(c, "closed the connection in the middle of a request", /*expected=*/false);
      }
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        disconnect(c, errnoStatus(StatusCode::kConnectionError, "recv").message(), /*expected=*/false);
      }
      return;
    }
    if (c.phase == Phase::kHeader) {
      c.header_got += static_cast<size_t>(n);
      if (c.header_got == kRequestHeaderBytes) onHeader(c);
    } else {
      c.body_got += static_cast<size_t>(n);
      if (c.body_got == c.body_expected) handleRequest(c);
    }
  }
}

void TcpStoreServer::Loop::onHeader(Client& c) {
  c.header = decodeRequestHeader(c.header_bytes.data());
  Status valid = validateRequestHeader(c.header);
  if (!valid) {
    reject(c, valid);
    return;
  }
  const size_t body_bytes = size_t{c.header.key_bytes} + c.header.value_bytes;
  if (static_cast<StoreOp>(c.header.op) == StoreOp::kSet) {
    const size_t would_hold = total_bytes_ + reserved_bytes_ + body_bytes;
    if (would_hold > options_.max_total_bytes) {
      reject(c, makeStatus(StatusCode::kInvalidArgument, "set of {} bytes would bring the store to {} bytes, limit {}",
                           body_bytes, would_hold, options_.max_total_bytes));
      return;
    }
    c.reserved = body_bytes;
    reserved_bytes_ += body_bytes;
  }
  c.body.clear();
  c.body_got = 0;
  c.body_expected = body_bytes;
  c.phase = Phase::kBody;
  if (body_bytes == 0) handleRequest(c);
}

void TcpStoreServer::Loop::handleRequest(Client& c) {
  reserved_bytes_ -= c.reserved;  // storeValue() counts what is kept
  c.reserved = 0;
  const auto key_end = c.body.begin() + c.header.key_bytes;
  const std::string key(c.body.begin(), key_end);
  switch (static_cast<StoreOp>(c.header.op)) {
    case StoreOp::kSet: {
      c.body.erase(c.body.begin(), key_end);
      storeValue(key, std::move(c.body));
      respond(c, encodeResponse(StatusCode::kOk, {}));
      wakeWaiters(key);
      break;
    }
    case StoreOp::kGet: {
      auto it = values_.find(key);
      if (it == values_.end()) {
        park(c, key);
      } else {
        respond(c, encodeResponse(StatusCode::kOk, it->second));
      }
      break;
    }
    case StoreOp::kAdd: {
      Result<int64_t> sum = applyAdd(key, decodeInt64(c.body.data() + c.header.key_bytes));
      if (!sum) {
        // The request was well formed; only this operation fails, the connection stays.
        respond(c, encodeErrorResponse(sum.status()));
      } else {
        const auto bytes = encodeInt64(*sum);
        respond(c, encodeResponse(StatusCode::kOk, {bytes.begin(), bytes.end()}));
        wakeWaiters(key);
      }
      break;
    }
  }
  c.body = {};
  c.body_got = 0;
  c.body_expected = 0;
}

Result<int64_t> TcpStoreServer::Loop::applyAdd(const std::string& key, int64_t delta) {
  int64_t old_value = 0;
  if (auto it = values_.find(key); it != values_.end()) {
    Result<int64_t> parsed = parseCounter(key, it->second);
    if (!parsed) return parsed.status();
    old_value = *parsed;
  }
  Result<int64_t> sum = addCounter(key, old_value, delta);
  if (sum) storeValue(key, formatCounter(*sum));
  return sum;
}

void TcpStoreServer::Loop::storeValue(const std::string& key, std::vector<uint8_t> value) {
  auto [it, inserted] = values_.try_emplace(key);
  if (inserted) {
    total_bytes_ += key.size();
  } else {
    total_bytes_ -= it->second.size();
  }
  total_bytes_ += value.size();
  it->second = std::move(value);
}

void TcpStoreServer::Loop::wakeWaiters(const std::string& key) {
  auto node = waiters_.extract(key);
  if (node.empty()) return;
  const std::vector<uint8_t>& value = values_.at(key);
  for (uint64_t token : node.mapped()) {
    auto it = clients_.find(token);
    if (it == clients_.end() || it->second->closing) continue;
    Client& waiter = *it->second;
    waiter.parked_key.clear();
    respond(waiter, encodeResponse(StatusCode::kOk, value));
  }
}

void TcpStoreServer::Loop::park(Client& c, const std::string& key) {
  c.phase = Phase::kParked;
  c.parked_key = key;
  waiters_[key].push_back(c.token);
  setInterest(c, EPOLLRDHUP);
}

void TcpStoreServer::Loop::respond(Client& c, std::vector<uint8_t> bytes) {
  c.out = std::move(bytes);
  c.out_sent = 0;
  c.phase = Phase::kWriting;
  flush(c);
}

void TcpStoreServer::Loop::flush(Client& c) {
  while (c.out_sent < c.out.size()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      setInterest(c, EPOLLOUT);
      return;
    } else if (n < 0 && errno != EINTR) {
      disconnect(c, errnoStatus(StatusCode::kConnectionError, "send").message(), /*expected=*/false);
      return;
    }
  }
  c.out = {};
  c.out_sent = 0;
  c.phase = Phase::kHeader;
  c.header_got = 0;
  setInterest(c, EPOLLIN | EPOLLRDHUP);
}

void TcpStoreServer::Loop::setInterest(Client& c, uint32_t events) {
  if (c.closing || c.interest == events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c.token;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev) != 0) {
    disconnect(c, errnoStatus(StatusCode::kIoError, "epoll_ctl(MOD)").message(), /*expected=*/false);
    return;
  }
  c.interest = events;
}

void TcpStoreServer::Loop::reject(Client& c, const Status& why) {
  if (c.closing) return;
  spdlog::warn("TCP store {}: closing connection from {}: {}", address_, c.peer, why.toString());
  // Best effort, never blocking: a client that reads gets the reason, others just see the close.
  const std::vector<uint8_t> reply = encodeErrorResponse(why);
  [[maybe_unused]] ssize_t n = ::send(c.fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  closeClient(c);
}

void TcpStoreServer::Loop::disconnect(Client& c, const std::string& why, bool expected) {
  if (c.closing) return;
  if (expected) {
    spdlog::debug("TCP store {}: {} {}", address_, c.peer, why);
  } else {
    spdlog::warn("TCP store {}: closing connection from {}: {}", address_, c.peer, why);
  }
  closeClient(c);
}

void TcpStoreServer::Loop::closeClient(Client& c) {
  if (c.closing) return;
  c.closing = true;
  reserved_bytes_ -= c.reserved;
  c.reserved = 0;
  if (c.phase == Phase::kParked) {
    if (auto it = waiters_.find(c.parked_key); it != waiters_.end()) {
      std::erase(it->second, c.token);
      if (it->second.empty()) waiters_.erase(it);
    }
  }
  c.fd.reset();  // closing also removes it from the epoll set; the peer sees the close now
  closed_.push_back(c.token);
}

Result<std::unique_ptr<TcpStoreServer>> TcpStoreServer::start(const std::string& host, uint16_t port,
                                                              TcpStoreServerOptions options) {
  const std::string requested = formatHostPort(host.empty() ? "*" : host, port);
  Result<Fd> listen_fd = listenOn(host, port);
  if (!listen_fd) return listen_fd.status().withContext("TCP store server");

  Result<SocketAddress> bound = localAddress(listen_fd->get());
  if (!bound) return bound.status().withContext(fmt::format("TCP store on {}", requested));
  const uint16_t bound_port = bound->port();
  std::string address = bound->toString();

  Fd epoll_fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd.valid()) return errnoStatus(StatusCode::kIoError, "epoll_create1 for TCP store");
  Fd wake_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd.valid()) return errnoStatus(StatusCode::kIoError, "eventfd for TCP store");
  for (auto [fd, token] : {std::pair{listen_fd->get(), kListenToken}, std::pair{wake_fd.get(), kWakeToken}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = token;
    if (::epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return errnoStatus(StatusCode::kIoError, "epoll_ctl(ADD) for TCP store");
    }
  }
  auto loop = std::make_unique<Loop>(std::move(*listen_fd), std::move(epoll_fd), std::move(wake_fd), address, options);
  spdlog::info("TCP store serving on {}", address);
  return std::unique_ptr<TcpStoreServer>(new TcpStoreServer(std::move(loop), bound_port, std::move(address)));
}

TcpStoreServer::TcpStoreServer(std::unique_ptr<Loop> loop, uint16_t port, std::string address)
    : loop_(std::move(loop)), port_(port), address_(std::move(address)) {
  thread_ = std::thread([loop = loop_.get()] { loop->run(); });
}

TcpStoreServer::~TcpStoreServer() {
  loop_->stop();
  thread_.join();
}

}  // namespace poseidon::transport::bootstrap
