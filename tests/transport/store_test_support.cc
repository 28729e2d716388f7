#include "tests/transport/store_test_support.h"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <chrono>

#include "transport/common/socket.h"
#include "transport/wire/handshake.h"

namespace poseidon::transport::bootstrap::testing {

Deadline soon() { return Deadline::after(std::chrono::seconds(5)); }

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::unique_ptr<TcpStoreServer> startServer(TcpStoreServerOptions options) {
  options.secret = kTestSecret;
  Result<std::unique_ptr<TcpStoreServer>> server = TcpStoreServer::start("127.0.0.1", 0, options);
  if (!server) ADD_FAILURE() << server.status().toString();
  return server ? std::move(*server) : nullptr;
}

Result<std::unique_ptr<TcpStore>> connectWith(uint16_t port, const std::string& secret, Deadline deadline) {
  TcpStoreOptions options;
  options.secret = secret;
  return TcpStore::connect("127.0.0.1", port, deadline, options);
}

Bytes requestHeader(uint32_t magic, uint16_t version, uint16_t op, uint32_t key_bytes, uint32_t value_bytes) {
  Bytes out;
  auto put = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  put(magic, 4);
  put(version, 2);
  put(op, 2);
  put(key_bytes, 4);
  put(value_bytes, 4);
  return out;
}

Bytes requestBytes(StoreOp op, const std::string& key, const Bytes& value) { return encodeRequest(op, key, value); }

RawStoreClient::RawStoreClient(uint16_t port) {
  Result<Fd> fd = connectOnce("127.0.0.1", port, soon());
  if (fd) fd_ = std::move(*fd);
}

Status RawStoreClient::readFrame(std::array<uint8_t, kResponseHeaderBytes>& header, ResponseHeader& decoded,
                                 Bytes& body) {
  POSEIDON_RETURN_IF_ERROR(recvAll(fd_.get(), header.data(), header.size(), soon(), "store"));
  decoded = decodeResponseHeader(header.data());
  POSEIDON_RETURN_IF_ERROR(validateResponseHeader(decoded));
  body.resize(decoded.value_bytes);
  return recvAll(fd_.get(), body.data(), body.size(), soon(), "store");
}

Status RawStoreClient::readGreeting() {
  std::array<uint8_t, kResponseHeaderBytes> header{};
  ResponseHeader decoded;
  Bytes body;
  POSEIDON_RETURN_IF_ERROR(readFrame(header, decoded, body));
  if (decoded.code != 0) return Status(static_cast<StatusCode>(decoded.code), std::string(body.begin(), body.end()));
  if (body.size() != server_nonce_.size()) return Status(StatusCode::kProtocolError, "greeting is not a nonce");
  std::copy(body.begin(), body.end(), server_nonce_.begin());
  return Status::ok();
}

Status RawStoreClient::hello(const std::string& secret) {
  const StoreNonce client_nonce = randomStoreNonce();
  Result<Sha256Mac> key = storeSessionKey(secret, server_nonce_, client_nonce);
  if (!key) return key.status();
  key_ = *key;
  Result<Bytes> reply = call(requestBytes(StoreOp::kHello, "", {client_nonce.begin(), client_nonce.end()}));
  return reply ? Status::ok() : reply.status();
}

Status RawStoreClient::authenticate(const std::string& secret) {
  POSEIDON_RETURN_IF_ERROR(readGreeting());
  return hello(secret);
}

Bytes RawStoreClient::macOf(const Bytes& request) const {
  StoreMessageMac mac(key_, StoreDirection::kRequest, sequence_);
  Result<Sha256Mac> sealed = mac.update(request.data(), request.size()).finish();
  return sealed ? Bytes(sealed->begin(), sealed->end()) : Bytes(kStoreMacBytes, 0);
}

Status RawStoreClient::sendBytes(const Bytes& data) {
  return sendAll(fd_.get(), data.data(), data.size(), soon(), "store");
}

Result<Bytes> RawStoreClient::call(const Bytes& request) {
  Bytes sealed = request;
  const Bytes mac = macOf(request);
  sealed.insert(sealed.end(), mac.begin(), mac.end());
  POSEIDON_RETURN_IF_ERROR(sendBytes(sealed));
  return readResponse();
}

Result<Bytes> RawStoreClient::readResponse() {
  std::array<uint8_t, kResponseHeaderBytes> header{};
  ResponseHeader decoded;
  Bytes body;
  POSEIDON_RETURN_IF_ERROR(readFrame(header, decoded, body));
  Sha256Mac received{};
  POSEIDON_RETURN_IF_ERROR(recvAll(fd_.get(), received.data(), received.size(), soon(), "store"));
  StoreMessageMac mac(key_, StoreDirection::kResponse, sequence_);
  Result<Sha256Mac> expected = mac.update(header.data(), header.size()).update(body.data(), body.size()).finish();
  if (!expected || !wire::proofsEqual(*expected, received)) {
    return Status(StatusCode::kAuthError, "response MAC does not match");
  }
  ++sequence_;
  if (decoded.code != 0) return Status(static_cast<StatusCode>(decoded.code), std::string(body.begin(), body.end()));
  return body;
}

bool RawStoreClient::closedByServer(Deadline deadline) {
  uint8_t buffer[4096];
  while (!deadline.expired()) {
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0) return true;
    if (n > 0) {
      received_text_.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
      continue;
    }
    if (errno != EAGAIN && errno != EINTR) return true;  // reset
    pollfd p{fd_.get(), POLLIN, 0};
    ::poll(&p, 1, 50);
  }
  return false;
}

}  // namespace poseidon::transport::bootstrap::testing
