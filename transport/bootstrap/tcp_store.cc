#include "transport/bootstrap/tcp_store.h"

#include "transport/wire/handshake.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <thread>

namespace poseidon::transport::bootstrap {

namespace {

constexpr int kKeepIdleSeconds = 10;
constexpr int kKeepIntervalSeconds = 5;
constexpr int kKeepCount = 3;
constexpr auto kDisplacedRetryPause = std::chrono::milliseconds(10);
constexpr int kClosedFirstRetries = 50;
constexpr int64_t kMaxIdleMillis = int64_t{86'400'000};

// Readies a fresh connection to the server.
Fd configureStoreSocket(Fd fd) {
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

}  // namespace

Result<std::unique_ptr<TcpStore>> TcpStore::connect(const std::string& host, uint16_t port, Deadline deadline,
                                                    TcpStoreOptions options) {
  // Rank 0 may still be starting: connectWithRetry backs off and tries again until the deadline.
  Result<Connection> first = open(host, port, options.secret, deadline, /*wait_for_server=*/true);
  if (!first) return first.status();
  return std::unique_ptr<TcpStore>(new TcpStore(host, port, std::move(options), std::move(*first)));
}

Result<TcpStore::Connection> TcpStore::open(const std::string& host, uint16_t port, const std::string& secret,
                                            Deadline deadline, bool wait_for_server) {
  const std::string address = formatHostPort(host, port);
  int closed_first = 0;
  while (true) {
    // After the first connection only one attempt: the server was up once, so a refusal now
    // means it is gone.
    Result<Fd> fd = wait_for_server ? connectWithRetry(host, port, deadline) : connectOnce(host, port, deadline);
    if (!fd) return Status(StatusCode::kConnectionError, fd.status().withContext("TCP store").message());
    Failure failure = Failure::kOther;
    Result<Connection> connection =
        authenticate(configureStoreSocket(std::move(*fd)), secret, address, deadline, failure);
    // A close without a reason may be a displacement whose reason the reset overtook, or a port
    // that accepts and closes: tried again a bounded number of times.
    const bool displaced =
        failure == Failure::kDisplaced || (failure == Failure::kClosedFirst && ++closed_first <= kClosedFirstRetries);
    if (connection || !displaced || deadline.expired()) return connection;
    // Strangers flooding the store from our host displaced this connection before its hello
    // was read (its reason, or a reset when the close overtook it): try again on a new one.
    std::this_thread::sleep_for(kDisplacedRetryPause);
  }
}

TcpStore::TcpStore(std::string host, uint16_t port, TcpStoreOptions options, Connection first)
    : host_(std::move(host)), port_(port), address_(formatHostPort(host_, port_)), options_(std::move(options)) {
  idle_.push_back(std::move(first));
}

Result<TcpStore::Connection> TcpStore::authenticate(Fd fd, const std::string& secret, const std::string& address,
                                                    Deadline deadline, Failure& failure) {
  const std::string what = fmt::format("authenticating to the TCP store at {}", address);
  // The greeting: the server's nonce, or why it will not serve this connection.
  std::array<uint8_t, kResponseHeaderBytes> header_bytes{};
  Status io = recvAll(fd.get(), header_bytes.data(), header_bytes.size(), deadline, address);
  if (!io) {
    if (io.code() == StatusCode::kConnectionError) failure = Failure::kClosedFirst;
    return io.withContext(what);
  }
  const ResponseHeader header = decodeResponseHeader(header_bytes.data());
  POSEIDON_RETURN_IF_ERROR(validateResponseHeader(header).withContext(what));
  // Checked before anything is allocated: any listener on that port can send this.
  if (header.code == static_cast<uint16_t>(StatusCode::kOk) && header.value_bytes != kStoreNonceBytes) {
    return makeStatus(StatusCode::kProtocolError, "{}: greeting of {} bytes, expected a {}-byte nonce", what,
                      header.value_bytes, kStoreNonceBytes);
  }
  std::vector<uint8_t> body(header.value_bytes);
  io = recvAll(fd.get(), body.data(), body.size(), deadline, address);
  if (!io) return io.withContext(what);
  if (header.code != static_cast<uint16_t>(StatusCode::kOk)) {
    if (header.code == static_cast<uint16_t>(StatusCode::kUnavailable)) failure = Failure::kDisplaced;
    return Status(static_cast<StatusCode>(header.code), fmt::format("the TCP store at {} refused this connection: {}",
                                                                    address, std::string(body.begin(), body.end())));
  }
  StoreNonce server_nonce{};
  std::copy(body.begin(), body.end(), server_nonce.begin());
  const StoreNonce client_nonce = randomStoreNonce();
  Result<Sha256Mac> key = storeSessionKey(secret, server_nonce, client_nonce);
  if (!key) return key.status().withContext(what);

  // The hello's MAC proves our secret; the MAC of its response proves the server's.
  Connection connection{std::move(fd), *key, 0, {}, Clock::now()};
  Result<std::vector<uint8_t>> reply =
      exchange(connection, encodeRequest(StoreOp::kHello, "", {client_nonce.begin(), client_nonce.end()}), deadline,
               address, failure);
  if (!reply) return reply.status().withContext(what);
  // At most a day, so the value in nanoseconds cannot overflow.
  const int64_t idle_ms = reply->size() == kCounterBytes ? decodeInt64(reply->data()) : 0;
  if (idle_ms <= 0 || idle_ms > kMaxIdleMillis) {
    return makeStatus(StatusCode::kProtocolError,
                      "{}: the hello's reply announces an idle time-out of {} ms ({} bytes), expected 1 to {}", what,
                      idle_ms, reply->size(), kMaxIdleMillis);
  }
  // Half the server's idle time-out: a connection is never reused near the moment it closes it.
  connection.retire_after = std::chrono::milliseconds(idle_ms) / 2;
  return connection;
}

Result<std::vector<uint8_t>> TcpStore::exchange(Connection& connection, std::vector<uint8_t> request, Deadline deadline,
                                                const std::string& address, Failure& failure) {
  failure = Failure::kOther;
  POSEIDON_RETURN_IF_ERROR(appendMac(connection.session_key, StoreDirection::kRequest, connection.sequence, request));
  const int fd = connection.fd.get();
  Status io = sendAll(fd, request.data(), request.size(), deadline, address);
  std::array<uint8_t, kResponseHeaderBytes> header_bytes{};
  if (io) io = recvAll(fd, header_bytes.data(), header_bytes.size(), deadline, address);
  if (!io) {
    if (io.code() == StatusCode::kConnectionError) failure = Failure::kClosedFirst;
    return io;
  }
  const ResponseHeader header = decodeResponseHeader(header_bytes.data());
  POSEIDON_RETURN_IF_ERROR(validateResponseHeader(header));
  std::vector<uint8_t> body(header.value_bytes);
  POSEIDON_RETURN_IF_ERROR(recvAll(fd, body.data(), body.size(), deadline, address));
  const bool ok = header.code == static_cast<uint16_t>(StatusCode::kOk);
  const std::string text = ok ? std::string() : std::string(body.begin(), body.end());

  Sha256Mac received{};
  io = recvAll(fd, received.data(), received.size(), deadline, address);
  if (!io) {
    // Before the hello's reply the server has no key, so a reason it gives then has no MAC. Later
    // one without a MAC is no answer at all: anyone on the path could have written it.
    if (!ok && connection.sequence == 0) {
      if (header.code == static_cast<uint16_t>(StatusCode::kUnavailable)) failure = Failure::kDisplaced;
      return Status(static_cast<StatusCode>(header.code), text + " (reply not authenticated)");
    }
    if (!ok) {
      return makeStatus(StatusCode::kConnectionError,
                        "the TCP store at {} closed the connection giving a reason without a MAC, so not believed: "
                        "'{}'",
                        address, text);
    }
    return io;
  }
  StoreMessageMac response_mac(connection.session_key, StoreDirection::kResponse, connection.sequence);
  response_mac.update(header_bytes.data(), header_bytes.size()).update(body.data(), body.size());
  Result<Sha256Mac> expected = response_mac.finish();
  if (!expected) return expected.status();
  if (!wire::proofsEqual(*expected, received)) {
    if (!ok) {
      return Status(static_cast<StatusCode>(header.code),
                    text + " (reply not authenticated: the store holds another secret than this process)");
    }
    return makeStatus(StatusCode::kAuthError,
                      "a reply from the TCP store at {} failed authentication: the store holds another secret than "
                      "this process, or the reply was altered on the way",
                      address);
  }
  ++connection.sequence;
  if (!ok) return Status(static_cast<StatusCode>(header.code), text);
  return body;
}

Status TcpStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  Result<std::vector<uint8_t>> reply = roundTrip(StoreOp::kSet, key, value, Deadline::after(options_.io_timeout));
  return reply ? Status::ok() : reply.status();
}

Result<std::vector<uint8_t>> TcpStore::get(const std::string& key, Deadline deadline) {
  Result<std::vector<uint8_t>> reply = roundTrip(StoreOp::kGet, key, {}, deadline);
  if (!reply && reply.status().code() == StatusCode::kTimeout) {
    return makeStatus(StatusCode::kTimeout, "key {} was not set at TCP store {} before the deadline", describeKey(key),
                      address_);
  }
  return reply;
}

Result<int64_t> TcpStore::add(const std::string& key, int64_t delta) {
  const auto bytes = encodeInt64(delta);
  Result<std::vector<uint8_t>> reply =
      roundTrip(StoreOp::kAdd, key, {bytes.begin(), bytes.end()}, Deadline::after(options_.io_timeout));
  if (!reply) return reply.status();
  if (reply->size() != kCounterBytes) {
    return makeStatus(StatusCode::kProtocolError, "add {} at TCP store {}: reply of {} bytes, expected {}",
                      describeKey(key), address_, reply->size(), kCounterBytes);
  }
  return decodeInt64(reply->data());
}

Result<std::vector<uint8_t>> TcpStore::roundTrip(StoreOp op, const std::string& key, const std::vector<uint8_t>& value,
                                                 Deadline deadline) {
  POSEIDON_RETURN_IF_ERROR(checkKeyValue(key, value.size()));
  const std::string what = fmt::format("{} {} at TCP store {}", storeOpName(op), describeKey(key), address_);
  std::vector<uint8_t> request = encodeRequest(op, key, value);
  Result<Connection> connection = borrowConnection(deadline);
  if (!connection) return connection.status().withContext(what);
  Failure failure = Failure::kOther;
  Result<std::vector<uint8_t>> reply = exchange(*connection, std::move(request), deadline, address_, failure);
  if (!reply) {
    // Dropped, never pooled: after a failure the connection may be mid-message, and after an
    // error reply the server may close it.
    return reply.status().withContext(what);
  }
  returnConnection(std::move(*connection));
  return reply;
}

Result<TcpStore::Connection> TcpStore::borrowConnection(Deadline deadline) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The most recently used first; those idle too long are closed (the server is about to).
    while (!idle_.empty()) {
      Connection connection = std::move(idle_.back());
      idle_.pop_back();
      if (Clock::now() - connection.idle_since < connection.retire_after) return connection;
    }
  }
  return open(host_, port_, options_.secret, deadline, /*wait_for_server=*/false);
}

void TcpStore::returnConnection(Connection connection) {
  connection.idle_since = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(connection));
}

}  // namespace poseidon::transport::bootstrap
