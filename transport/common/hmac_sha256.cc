#include "transport/common/hmac_sha256.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>

namespace poseidon::transport {

namespace {

// Fetched once: the provider lookup costs more than a small message's MAC.
EVP_MAC* hmacAlgorithm() {
  static EVP_MAC* const algorithm = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return algorithm;
}

}  // namespace

HmacSha256::HmacSha256(const void* key, size_t key_bytes) {
  EVP_MAC* algorithm = hmacAlgorithm();
  ctx_ = algorithm == nullptr ? nullptr : EVP_MAC_CTX_new(algorithm);
  if (ctx_ == nullptr) {
    failed_ = true;
    return;
  }
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  // A null key means "keep the old one" to EVP_MAC_init, so an empty key still gets a pointer.
  static const unsigned char kNoKey = 0;
  const auto* key_bytes_ptr = key_bytes == 0 ? &kNoKey : static_cast<const unsigned char*>(key);
  failed_ = EVP_MAC_init(ctx_, key_bytes_ptr, key_bytes, params) != 1;
}

HmacSha256::~HmacSha256() { EVP_MAC_CTX_free(ctx_); }

HmacSha256& HmacSha256::update(const void* data, size_t bytes) {
  if (!failed_ && bytes > 0) failed_ = EVP_MAC_update(ctx_, static_cast<const unsigned char*>(data), bytes) != 1;
  return *this;
}

HmacSha256& HmacSha256::updateU64(uint64_t value) {
  std::array<uint8_t, 8> bytes{};
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));
  return update(bytes.data(), bytes.size());
}

Result<Sha256Mac> HmacSha256::finish() {
  Sha256Mac mac{};
  size_t length = 0;
  if (failed_ || EVP_MAC_final(ctx_, mac.data(), &length, mac.size()) != 1 || length != mac.size()) {
    failed_ = true;
    return Status(StatusCode::kInternal, "HMAC-SHA256 failed in OpenSSL (out of memory?)");
  }
  failed_ = true;  // EVP_MAC_final ends the computation
  return mac;
}

}  // namespace poseidon::transport
