#include "transport/bootstrap/tcp_store.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>

namespace poseidon::transport::bootstrap {

namespace {

constexpr int kKeepIdleSeconds = 10;
constexpr int kKeepIntervalSeconds = 5;
constexpr int kKeepCount = 3;

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
  Result<Fd> fd = connectWithRetry(host, port, deadline);
  if (!fd) return Status(StatusCode::kConnectionError, fd.status().withContext("TCP store").message());
  return std::unique_ptr<TcpStore>(new TcpStore(host, port, options, configureStoreSocket(std::move(*fd))));
}

TcpStore::TcpStore(std::string host, uint16_t port, TcpStoreOptions options, Fd first)
    : host_(std::move(host)), port_(port), address_(formatHostPort(host_, port_)), options_(options) {
  idle_.push_back(std::move(first));
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
  Result<Fd> fd = borrowConnection(deadline);
  if (!fd) return fd.status().withContext(what);

  // Any failure below leaves the connection mid-message: it is dropped, never returned to idle_.
  const std::vector<uint8_t> request = encodeRequest(op, key, value);
  Status io = sendAll(fd->get(), request.data(), request.size(), deadline, address_);
  if (!io) return io.withContext(what);
  std::array<uint8_t, kResponseHeaderBytes> header_bytes{};
  io = recvAll(fd->get(), header_bytes.data(), header_bytes.size(), deadline, address_);
  if (!io) return io.withContext(what);
  const ResponseHeader header = decodeResponseHeader(header_bytes.data());
  Status valid = validateResponseHeader(header);
  if (!valid) return valid.withContext(what);
  std::vector<uint8_t> body(header.value_bytes);
  io = recvAll(fd->get(), body.data(), body.size(), deadline, address_);
  if (!io) return io.withContext(what);

  if (header.code != static_cast<uint16_t>(StatusCode::kOk)) {
    // Not returned to idle_: after some errors (a rejected request) the server closes it.
    return Status(static_cast<StatusCode>(header.code), std::string(body.begin(), body.end())).withContext(what);
  }
  returnConnection(std::move(*fd));
  return body;
}

Result<Fd> TcpStore::borrowConnection(Deadline deadline) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      Fd fd = std::move(idle_.back());
      idle_.pop_back();
      return fd;
    }
  }
  // One attempt only: the server was up once, so a refusal now means it is gone.
  Result<Fd> fd = connectOnce(host_, port_, deadline);
  if (!fd) return fd.status();
  return configureStoreSocket(std::move(*fd));
}

void TcpStore::returnConnection(Fd fd) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(fd));
}

}  // namespace poseidon::transport::bootstrap
