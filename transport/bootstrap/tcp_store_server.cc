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
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/deadline.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_auth.h"
#include "transport/bootstrap/store_ledger.h"
#include "transport/bootstrap/store_protocol.h"
#include "transport/bootstrap/tcp_store_server_loop.h"
#include "transport/common/socket.h"

namespace poseidon::transport::bootstrap {

using namespace store_server;

void TcpStoreServer::Loop::run() {
  std::array<epoll_event, kMaxEvents> events{};
  bool stopping = false;
  next_sweep_ = Clock::now() + kSweepPeriod;
  while (!stopping) {
    int timeout_ms = clients_.empty() ? -1 : static_cast<int>(kSweepPeriod.count());
    if (leaving_) {  // wake at the leave time-out, not up to a sweep period past it
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(leave_by_ - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, kSweepPeriod.count()));
    }
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
      if (errno == EINTR) {
        if (leaving_ && doneLeaving(Clock::now())) break;
        continue;
      }
      spdlog::error("TCP store {}: epoll_wait failed: {}; closing every connection", address_,
                    errnoStatus(StatusCode::kIoError, "epoll_wait").message());
      break;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t token = events[i].data.u64;
      if (token == kListenToken) {
        acceptAll();
      } else if (token == kWakeToken) {
        stopping = startLeaving(Clock::now());
      } else if (auto it = clients_.find(token); it != clients_.end() && !it->second->closing) {
        Client& c = *it->second;
        try {
          onEvent(c, events[i].events);
        } catch (const std::exception& e) {  // e.g. bad_alloc for a large value: lose the client, not the job
          reject(c, makeStatus(StatusCode::kInternal, "failed to serve request: {}", e.what()));
        }
      }
    }
    if (const Clock::time_point now = Clock::now(); now >= next_sweep_) {
      sweep(now);
      next_sweep_ = now + kSweepPeriod;
    }
    for (uint64_t token : closed_) clients_.erase(token);
    closed_.clear();
    if (leaving_ && !stopping) stopping = doneLeaving(Clock::now());
  }
  spdlog::debug("TCP store {}: stopping, closing {} connections", address_, clients_.size());
  waiters_.clear();
  clients_.clear();
  listen_fd_.reset();
}

void TcpStoreServer::Loop::acceptAll() {
  // A bounded batch: connections arriving as fast as they are accepted (a flood) must not keep
  // the loop from the hellos and requests of the clients already in.
  for (int accepted = 0; accepted < kMaxAcceptsPerEvent; ++accepted) {
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
    admit(Fd(fd), formatSockaddr(reinterpret_cast<sockaddr*>(&addr), len));
  }
}

void TcpStoreServer::Loop::admit(Fd fd, std::string peer) {
  // Nobody is turned away at the door: a stranger cannot be told from a rank before the hello, so
  // the newcomer gets its round trip and the connection waiting longest gives up its place.
  const std::string host = peer.substr(0, peer.rfind(':'));
  if (pending_by_host_[host] >= options_.max_pending_per_host) {
    dropOldestPending(host);
  } else if (pending_ >= options_.max_pending_clients) {
    dropOldestPending("");
  }
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  auto client = std::make_unique<Client>();
  client->token = next_token_++;
  client->fd = std::move(fd);
  client->peer = std::move(peer);
  client->host = host;
  client->accepted_at = client->last_activity = Clock::now();
  client->server_nonce = randomStoreNonce();
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = client->token;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, client->fd.get(), &ev) != 0) {
    spdlog::warn("TCP store {}: dropping connection from {}: {}", address_, client->peer,
                 errnoStatus(StatusCode::kIoError, "epoll_ctl(ADD)").message());
    return;
  }
  client->interest = ev.events;
  spdlog::debug("TCP store {}: {} connected", address_, client->peer);
  ++pending_;
  ++pending_by_host_[host];
  pending_order_.push_back(client->token);
  Client& c = *clients_.emplace(client->token, std::move(client)).first->second;
  // The greeting: the nonce this connection's key is made from (store_auth.h).
  send(c, encodeResponse(StatusCode::kOk, {c.server_nonce.begin(), c.server_nonce.end()}));
}

void TcpStoreServer::Loop::dropOldestPending(const std::string& host) {
  for (auto at = pending_order_.begin(); at != pending_order_.end();) {
    auto it = clients_.find(*at);
    if (it == clients_.end() || it->second->closing || it->second->authenticated) {
      at = pending_order_.erase(at);  // stale: closed or authenticated since
      continue;
    }
    Client& c = *it->second;
    if (!host.empty() && c.host != host) {
      ++at;
      continue;
    }
    // A rank's hello may be waiting unread in its socket (a batch of accepts ran first): read it
    // before judging, so only connections that really have not proved anything are dropped.
    if (c.phase != Phase::kWriting) readRequest(c);
    if (c.closing || c.authenticated) {
      at = pending_order_.erase(at);
      continue;
    }
    pending_order_.erase(at);
    ++dropped_pending_;
    spdlog::debug("TCP store {}: dropping {}, not authenticated yet, for a newer connection", address_, c.peer);
    const std::vector<uint8_t> reply = encodeErrorResponse(
        makeStatus(StatusCode::kUnavailable,
                   "dropped before authenticating: newer connections from {} were waiting (limit {} "
                   "per host, {} in all)",
                   host.empty() ? "every host" : host, options_.max_pending_per_host, options_.max_pending_clients));
    sendReasonAndClose(c, reply);
    return;
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
    case Phase::kMac:
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

bool TcpStoreServer::Loop::startLeaving(Clock::time_point now) {
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = ::read(wake_fd_.get(), &count, sizeof(count));  // level-triggered: clear it
  if (leaving_) return false;                                                  // stop() once more: already leaving
  if (connectedRanks() == 0 || options_.leave_timeout.count() <= 0) return true;
  leaving_ = true;
  leave_by_ = now + options_.leave_timeout;
  spdlog::debug("TCP store {}: leaving once {} connections have closed (at most {} ms)", address_, connectedRanks(),
                options_.leave_timeout.count());
  // A key not set by now is refused, not waited for: the host is on its way out.
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& [key, tokens] : waiters) {
    for (uint64_t token : tokens) {
      auto it = clients_.find(token);
      if (it == clients_.end() || it->second->closing) continue;
      it->second->parked_key.clear();
      respondError(*it->second, leavingRefusal(key), /*then_close=*/false);
    }
  }
  return false;
}

bool TcpStoreServer::Loop::doneLeaving(Clock::time_point now) {
  if (connectedRanks() == 0) return true;
  if (now < leave_by_) return false;
  spdlog::warn("TCP store {}: leaving with {} connections still open after {} ms; their next request fails", address_,
               connectedRanks(), options_.leave_timeout.count());
  return true;
}

Status TcpStoreServer::Loop::leavingRefusal(const std::string& key) const {
  return makeStatus(StatusCode::kConnectionError,
                    "the TCP store's host (rank 0) is leaving, and key {} is not set: a get no longer waits",
                    describeKey(key));
}

void TcpStoreServer::Loop::sweep(Clock::time_point now) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  if (rejected_strangers_ > 0) {
    spdlog::warn(
        "TCP store {}: closed {} connections that had not authenticated, for breaking the protocol or the "
        "hand-shake's time; the last: {}",
        address_, rejected_strangers_, last_stranger_reason_);
    rejected_strangers_ = 0;
  }
  if (dropped_pending_ > 0) {
    spdlog::warn(
        "TCP store {}: dropped {} connections that had not authenticated, for newer ones (limits: {} waiting "
        "per host, {} in all)",
        address_, dropped_pending_, options_.max_pending_per_host, options_.max_pending_clients);
    dropped_pending_ = 0;
  }
  for (auto& [token, client] : clients_) {
    Client& c = *client;
    if (c.closing || c.phase == Phase::kParked) continue;  // a parked get waits as long as its client does
    if (!c.authenticated) {
      if (now - c.accepted_at > options_.handshake_timeout) {
        reject(c, makeStatus(StatusCode::kTimeout, "did not authenticate within {} ms of connecting",
                             options_.handshake_timeout.count()));
      }
    } else if (c.phase == Phase::kHeader && c.header_got == 0) {
      if (now - c.last_activity > options_.idle_timeout) {
        disconnect(c,
                   fmt::format("idle for {} ms: closed (its client reconnects when it needs the store)",
                               duration_cast<milliseconds>(now - c.last_activity).count()),
                   /*expected=*/true);
      }
    } else if (now - c.last_activity > options_.request_timeout) {
      reject(c, makeStatus(StatusCode::kTimeout,
                           "request stalled: nothing moved for {} ms (the client stopped sending, or reading)",
                           duration_cast<milliseconds>(now - c.last_activity).count()));
    }
  }
  // Tokens of connections that authenticated or closed would pile up without a flood to pop them.
  if (pending_order_.size() > 2 * options_.max_pending_clients + 16) {
    std::erase_if(pending_order_, [this](uint64_t token) {
      auto it = clients_.find(token);
      return it == clients_.end() || it->second->closing || it->second->authenticated;
    });
  }
}

void TcpStoreServer::Loop::reject(Client& c, const Status& why) {
  if (c.closing) return;
  if (c.authenticated) {
    spdlog::warn("TCP store {}: closing connection from {}: {}", address_, c.peer, why.toString());
  } else {
    countStranger(c, why.toString());
  }
  // Sealed only while a request is being read and not yet answered, so the MAC's sequence number
  // is the one that client waits for (after a reply it would seal its next request's answer).
  std::vector<uint8_t> reply = encodeErrorResponse(why);
  const bool mid_request =
      c.phase == Phase::kBody || c.phase == Phase::kMac || (c.phase == Phase::kHeader && c.header_got > 0);
  if (c.has_key && mid_request && !appendMac(c.session_key, StoreDirection::kResponse, c.sequence, reply)) {
    reply = encodeErrorResponse(why);  // unsealed after all: the reason still reaches a reader
  }
  sendReasonAndClose(c, reply);
}

void TcpStoreServer::Loop::countStranger(const Client& c, const std::string& why) {
  // Strangers could fill the log one connection at a time: counted, said once per sweep.
  spdlog::debug("TCP store {}: closing connection from {}: {}", address_, c.peer, why);
  ++rejected_strangers_;
  last_stranger_reason_ = fmt::format("{}: {}", c.peer, why);
}

void TcpStoreServer::Loop::sendReasonAndClose(Client& c, const std::vector<uint8_t>& reply) {
  [[maybe_unused]] ssize_t n = ::send(c.fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  closeClient(c);
}

void TcpStoreServer::Loop::disconnect(Client& c, const std::string& why, bool expected) {
  if (c.closing) return;
  if (expected) {
    spdlog::debug("TCP store {}: {} {}", address_, c.peer, why);
  } else if (c.authenticated) {
    spdlog::warn("TCP store {}: closing connection from {}: {}", address_, c.peer, why);
  } else {
    countStranger(c, why);
  }
  closeClient(c);
}

void TcpStoreServer::Loop::closeClient(Client& c) {
  if (c.closing) return;
  c.closing = true;
  ledger_.forgetOwner(c.token);
  if (c.authenticated) {
    --authenticated_;
  } else {
    leavePending(c);
  }
  if (c.phase == Phase::kParked) {
    if (auto it = waiters_.find(c.parked_key); it != waiters_.end()) {
      std::erase(it->second, c.token);
      if (it->second.empty()) waiters_.erase(it);
    }
  }
  c.fd.reset();  // closing also removes it from the epoll set; the peer sees the close now
  closed_.push_back(c.token);
}

void TcpStoreServer::Loop::leavePending(const Client& c) {
  --pending_;
  if (auto it = pending_by_host_.find(c.host); it != pending_by_host_.end() && --it->second == 0) {
    pending_by_host_.erase(it);
  }
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
  auto loop = std::make_unique<Loop>(std::move(*listen_fd), std::move(epoll_fd), std::move(wake_fd), address,
                                     std::move(options));
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
