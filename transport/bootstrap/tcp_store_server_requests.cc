// Reading, checking and answering the requests of the TCP store's clients (tcp_store_server.h).
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "transport/bootstrap/store.h"
#include "transport/bootstrap/tcp_store_server_loop.h"
#include "transport/common/socket.h"
#include "transport/wire/handshake.h"

namespace poseidon::transport::bootstrap {

using namespace store_server;

void TcpStoreServer::Loop::readRequest(Client& c) {
  for (int i = 0; i < kMaxReadsPerEvent && !c.closing; ++i) {
    uint8_t* dst = nullptr;
    size_t want = 0;
    if (c.phase == Phase::kHeader) {
      dst = c.header_bytes.data() + c.header_got;
      want = kRequestHeaderBytes - c.header_got;
    } else if (c.phase == Phase::kBody && !c.refusal.isOk()) {
      if (scratch_.empty()) scratch_.resize(kFirstBodyChunk);
      dst = scratch_.data();
      want = std::min(scratch_.size(), c.body_expected - c.body_got);
    } else if (c.phase == Phase::kBody) {
      if (c.body.size() == c.body_got) {
        c.body.resize(std::min(c.body_expected, std::max(2 * c.body.size(), kFirstBodyChunk)));
      }
      dst = c.body.data() + c.body_got;
      want = c.body.size() - c.body_got;
    } else if (c.phase == Phase::kMac) {
      dst = c.mac.data() + c.mac_got;
      want = kStoreMacBytes - c.mac_got;
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
    const auto got = static_cast<size_t>(n);
    c.last_activity = Clock::now();
    if (c.phase == Phase::kHeader) {
      c.header_got += got;
      if (c.header_got == kRequestHeaderBytes) onHeader(c);
    } else if (c.phase == Phase::kBody) {
      if (c.request_mac) c.request_mac->update(dst, got);
      c.body_got += got;
      if (c.body_got == c.body_expected) onBodyComplete(c);
    } else {
      c.mac_got += got;
      if (c.mac_got == kStoreMacBytes) onRequestComplete(c);
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
  const auto op = static_cast<StoreOp>(c.header.op);
  if (!c.authenticated && op != StoreOp::kHello) {
    reject(c, makeStatus(StatusCode::kAuthError, "{} request before the hello: a client proves the job's secret first",
                         storeOpName(op)));
    return;
  }
  if (c.authenticated && op == StoreOp::kHello) {
    reject(c, Status(StatusCode::kProtocolError, "a second hello on an authenticated connection"));
    return;
  }
  c.body.clear();
  c.body_got = 0;
  c.body_expected = size_t{c.header.key_bytes} + c.header.value_bytes;
  c.mac_got = 0;
  c.refusal = Status::ok();
  if (c.authenticated) {
    c.request_mac.emplace(c.session_key, StoreDirection::kRequest, c.sequence);
    c.request_mac->update(c.header_bytes.data(), c.header_bytes.size());
  }
  if (op == StoreOp::kSet) {
    Status room = ledger_.reserve(c.token, c.header.key_bytes, c.header.value_bytes);
    if (!room) c.refusal = room.withContext("set refused");
  }
  c.phase = Phase::kBody;
  if (c.body_expected == 0) onBodyComplete(c);
}

void TcpStoreServer::Loop::onBodyComplete(Client& c) {
  c.phase = Phase::kMac;
  if (c.authenticated) return;
  // The hello: its nonce completes the session key, and its MAC under that key is the proof.
  StoreNonce client_nonce{};
  std::copy(c.body.begin(), c.body.begin() + kStoreNonceBytes, client_nonce.begin());
  Result<Sha256Mac> key = storeSessionKey(options_.secret, c.server_nonce, client_nonce);
  if (!key) {
    reject(c, key.status());
    return;
  }
  c.session_key = *key;
  c.has_key = true;
  c.request_mac.emplace(c.session_key, StoreDirection::kRequest, c.sequence);
  c.request_mac->update(c.header_bytes.data(), c.header_bytes.size()).update(c.body.data(), c.body.size());
}

void TcpStoreServer::Loop::onRequestComplete(Client& c) {
  Result<Sha256Mac> expected = c.request_mac->finish();
  c.request_mac.reset();
  if (!expected) {
    reject(c, expected.status());
    return;
  }
  if (!wire::proofsEqual(*expected, c.mac)) {
    if (!c.authenticated) {
      countStranger(c, "its hello does not prove this job's secret");
      respondError(c,
                   Status(StatusCode::kAuthError,
                          "the hello does not prove the job's secret: this process was given another secret than "
                          "rank 0 (or none)"),
                   /*then_close=*/true);
      return;
    }
    reject(c, makeStatus(StatusCode::kAuthError,
                         "{} request number {} failed authentication (its MAC does not match): altered on the way, "
                         "or not sent by this connection's client",
                         storeOpName(static_cast<StoreOp>(c.header.op)), c.sequence));
    return;
  }
  if (!c.authenticated) {
    finishHello(c);
  } else if (!c.refusal.isOk()) {
    spdlog::warn("TCP store {}: {}: {}", address_, c.peer, c.refusal.message());
    respondError(c, c.refusal, /*then_close=*/false);
  } else {
    handleRequest(c);
  }
}

void TcpStoreServer::Loop::finishHello(Client& c) {
  if (authenticated_ >= options_.max_clients) {
    spdlog::warn("TCP store {}: refusing {}: {} authenticated connections, limit {}", address_, c.peer, authenticated_,
                 options_.max_clients);
    respondError(c,
                 makeStatus(StatusCode::kUnavailable,
                            "the store serves {} connections, its limit; is a rank opening connections in a loop?",
                            authenticated_),
                 /*then_close=*/true);
    return;
  }
  c.authenticated = true;
  leavePending(c);
  ++authenticated_;
  // The reply says how long an idle connection is kept, so the client retires its pooled ones
  // before that and never sends a request into a close (a resend could repeat an add).
  // At most a day, which clients accept (a later close than announced is harmless).
  const auto idle = encodeInt64(std::min<int64_t>(options_.idle_timeout.count(), 86'400'000));
  respond(c, StatusCode::kOk, {idle.begin(), idle.end()});
}

void TcpStoreServer::Loop::handleRequest(Client& c) {
  const auto key_end = c.body.begin() + c.header.key_bytes;
  const std::string key(c.body.begin(), key_end);
  switch (static_cast<StoreOp>(c.header.op)) {
    case StoreOp::kSet: {
      c.body.erase(c.body.begin(), key_end);
      c.body.shrink_to_fit();  // the doubling growth left up to twice the value's size: hold only the value
      ledger_.set(c.token, key, std::move(c.body));
      respond(c, StatusCode::kOk, {});
      wakeWaiters(key);
      break;
    }
    case StoreOp::kGet: {
      if (const std::vector<uint8_t>* value = ledger_.find(key)) {
        respond(c, StatusCode::kOk, *value);
      } else {
        park(c, key);
      }
      break;
    }
    case StoreOp::kAdd: {
      Result<int64_t> sum = ledger_.add(c.token, key, decodeInt64(c.body.data() + c.header.key_bytes));
      if (!sum) {
        // The request was well formed; only this operation fails, the connection stays.
        respondError(c, sum.status(), /*then_close=*/false);
      } else {
        const auto bytes = encodeInt64(*sum);
        respond(c, StatusCode::kOk, {bytes.begin(), bytes.end()});
        wakeWaiters(key);
      }
      break;
    }
    case StoreOp::kHello: break;  // refused in onHeader once authenticated
  }
  c.body = {};
  c.body_got = 0;
  c.body_expected = 0;
}

void TcpStoreServer::Loop::wakeWaiters(const std::string& key) {
  auto node = waiters_.extract(key);
  if (node.empty()) return;
  const std::vector<uint8_t>& value = *ledger_.find(key);
  for (uint64_t token : node.mapped()) {
    auto it = clients_.find(token);
    if (it == clients_.end() || it->second->closing) continue;
    Client& waiter = *it->second;
    waiter.parked_key.clear();
    respond(waiter, StatusCode::kOk, value);
  }
}

void TcpStoreServer::Loop::park(Client& c, const std::string& key) {
  if (leaving_) {
    respondError(c, leavingRefusal(key), /*then_close=*/false);
    return;
  }
  c.phase = Phase::kParked;
  c.parked_key = key;
  waiters_[key].push_back(c.token);
  setInterest(c, EPOLLRDHUP);
}

void TcpStoreServer::Loop::respond(Client& c, StatusCode code, const std::vector<uint8_t>& value) {
  std::vector<uint8_t> bytes = encodeResponse(code, value);
  if (Status sealed = appendMac(c.session_key, StoreDirection::kResponse, c.sequence, bytes); !sealed) {
    reject(c, sealed);
    return;
  }
  ++c.sequence;
  send(c, std::move(bytes));
}

void TcpStoreServer::Loop::respondError(Client& c, const Status& status, bool then_close) {
  const std::string& message = status.message();
  c.close_after_write = then_close;
  respond(c, status.code(), {message.begin(), message.begin() + std::min(message.size(), kMaxErrorMessageBytes)});
}

void TcpStoreServer::Loop::send(Client& c, std::vector<uint8_t> bytes) {
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
      c.last_activity = Clock::now();
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      setInterest(c, EPOLLOUT);
      return;
    } else if (n < 0 && errno != EINTR) {
      disconnect(c, errnoStatus(StatusCode::kConnectionError, "send").message(), /*expected=*/false);
      return;
    }
  }
  if (c.close_after_write) {
    closeClient(c);
    return;
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

}  // namespace poseidon::transport::bootstrap
