#include "transport/bootstrap/store_auth.h"

#include "transport/wire/handshake.h"

namespace poseidon::transport::bootstrap {

StoreNonce randomStoreNonce() {
  static_assert(sizeof(wire::Nonce) == kStoreNonceBytes);
  return wire::randomNonce();
}

Result<Sha256Mac> storeSessionKey(const std::string& secret, const StoreNonce& server_nonce,
                                  const StoreNonce& client_nonce) {
  HmacSha256 hmac(secret.data(), secret.size());
  // Its own label, so no store key is ever equal to a data connection's proof.
  hmac.update("poseidon-store-session-key");
  hmac.update(server_nonce.data(), server_nonce.size()).update(client_nonce.data(), client_nonce.size());
  return hmac.finish();
}

StoreMessageMac::StoreMessageMac(const Sha256Mac& session_key, StoreDirection direction, uint64_t sequence)
    : hmac_(session_key) {
  const auto direction_byte = static_cast<uint8_t>(direction);
  hmac_.update(&direction_byte, 1).updateU64(sequence);
}

Status appendMac(const Sha256Mac& session_key, StoreDirection direction, uint64_t sequence,
                 std::vector<uint8_t>& message) {
  Result<Sha256Mac> mac =
      StoreMessageMac(session_key, direction, sequence).update(message.data(), message.size()).finish();
  if (!mac) return mac.status();
  message.insert(message.end(), mac->begin(), mac->end());
  return Status::ok();
}

}  // namespace poseidon::transport::bootstrap
