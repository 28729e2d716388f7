// What the TCP store's tests share: a server and clients holding the test's secret, and
// RawStoreClient, which speaks the store's protocol by hand, one step at a time, so tests can send
// what no TcpStore would: requests before the hello, altered or replayed ones, stalled bodies.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/bootstrap/store_auth.h"
#include "transport/bootstrap/store_protocol.h"
#include "transport/bootstrap/tcp_store.h"
#include "transport/bootstrap/tcp_store_server.h"
#include "transport/common/fd.h"

namespace poseidon::transport::bootstrap::testing {

using Bytes = std::vector<uint8_t>;

inline constexpr const char* kTestSecret = "the-job-secret";

Deadline soon();  // 5 s from now: long enough for any step here, short enough to fail a hang
double secondsSince(Clock::time_point start);

// A server on 127.0.0.1 (ephemeral port) holding kTestSecret; null (and a test failure) if not.
std::unique_ptr<TcpStoreServer> startServer(TcpStoreServerOptions options = {});
Result<std::unique_ptr<TcpStore>> connectWith(uint16_t port, const std::string& secret, Deadline deadline = soon());

// A request header with any field values, valid or not.
Bytes requestHeader(uint32_t magic, uint16_t version, uint16_t op, uint32_t key_bytes, uint32_t value_bytes);
// A well-formed request (header, key, value) of this version, without its MAC.
Bytes requestBytes(StoreOp op, const std::string& key, const Bytes& value);

class RawStoreClient {
 public:
  // Connects to 127.0.0.1:port; reads nothing yet.
  explicit RawStoreClient(uint16_t port);

  bool connected() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  // Reads the server's greeting and keeps its nonce.
  Status readGreeting();
  // Sends the hello for `secret` and checks the server's proof; readGreeting() first.
  Status hello(const std::string& secret);
  // Greeting and hello.
  Status authenticate(const std::string& secret);

  // The MAC the next request would carry (sequence of this connection).
  Bytes macOf(const Bytes& request) const;
  // Sends bytes as they are.
  Status sendBytes(const Bytes& data);
  // Sends a request with its MAC and reads the response (MAC checked), as TcpStore would.
  Result<Bytes> call(const Bytes& request);
  // Reads one response and checks its MAC; an error response becomes its Status.
  Result<Bytes> readResponse();

  // True when the server closes the connection before the deadline; whatever it sends before
  // the close (its reason) is kept in text().
  bool closedByServer(Deadline deadline);
  const std::string& text() const { return received_text_; }

 private:
  Status readFrame(std::array<uint8_t, kResponseHeaderBytes>& header, ResponseHeader& decoded, Bytes& body);

  Fd fd_;
  StoreNonce server_nonce_{};
  Sha256Mac key_{};
  uint64_t sequence_ = 0;
  std::string received_text_;
};

}  // namespace poseidon::transport::bootstrap::testing
