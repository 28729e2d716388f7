// Store authentication: both ends of a TCP store connection prove the job's secret, and every
// message after the greeting carries a MAC under a key of that connection alone.
//
//   server -> client  greeting: an OK response whose value is the server's nonce
//   client -> server  hello request: the client's nonce, with its MAC
//   server -> client  the hello's response, with its MAC: the server's proof; its value is the
//                     server's idle time-out in ms (int64), so the client retires pooled
//                     connections before the server closes them. A connection the server drops
//                     before the hello gets an error response without a MAC, the only one a client
//                     believes (as a reason, never as an answer to a request).
//   then every request and response carries a MAC; request n and its response have sequence n
//
// session key = HMAC-SHA256(secret, label || server nonce || client nonce)
// message MAC = HMAC-SHA256(session key, direction || sequence || header || body)
//
// The hello's MAC is the client's proof (only a holder of the secret can compute the key) and the
// response's MAC the server's. A stranger gets no request acted on; a recorded connection cannot
// be replayed (the server's nonce is new on each connection) and no message can be dropped,
// repeated or moved within one (the sequence). Values are not encrypted: docs/threat-model.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/common/hmac_sha256.h"

namespace poseidon::transport::bootstrap {

inline constexpr size_t kStoreNonceBytes = 32;
inline constexpr size_t kStoreMacBytes = 32;
using StoreNonce = std::array<uint8_t, kStoreNonceBytes>;

StoreNonce randomStoreNonce();

Result<Sha256Mac> storeSessionKey(const std::string& secret, const StoreNonce& server_nonce,
                                  const StoreNonce& client_nonce);

enum class StoreDirection : uint8_t { kRequest = 1, kResponse = 2 };

// The MAC of one message, fed in pieces as they arrive.
class StoreMessageMac {
 public:
  StoreMessageMac(const Sha256Mac& session_key, StoreDirection direction, uint64_t sequence);
  StoreMessageMac& update(const void* data, size_t bytes) {
    hmac_.update(data, bytes);
    return *this;
  }
  Result<Sha256Mac> finish() { return hmac_.finish(); }

 private:
  HmacSha256 hmac_;
};

// Seals a whole message held in one buffer: appends its MAC (message number `sequence`).
Status appendMac(const Sha256Mac& session_key, StoreDirection direction, uint64_t sequence,
                 std::vector<uint8_t>& message);

}  // namespace poseidon::transport::bootstrap
