// HmacSha256: HMAC-SHA256 over a message given in pieces (OpenSSL's EVP_MAC), so a message that
// arrives in several reads, or lives in several buffers, is authenticated without joining it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/status.h"

struct evp_mac_ctx_st;

namespace poseidon::transport {

using Sha256Mac = std::array<uint8_t, 32>;

class HmacSha256 {
 public:
  // Any key length, also 0 (a job without a secret still runs the same protocol).
  HmacSha256(const void* key, size_t key_bytes);
  explicit HmacSha256(const Sha256Mac& key) : HmacSha256(key.data(), key.size()) {}
  ~HmacSha256();
  HmacSha256(const HmacSha256&) = delete;
  HmacSha256& operator=(const HmacSha256&) = delete;

  HmacSha256& update(const void* data, size_t bytes);
  HmacSha256& update(std::string_view text) { return update(text.data(), text.size()); }
  HmacSha256& updateU64(uint64_t value);  // 8 bytes, little-endian
  // kInternal when OpenSSL failed at any step (it allocates); the object is spent afterwards.
  Result<Sha256Mac> finish();

 private:
  evp_mac_ctx_st* ctx_ = nullptr;
  bool failed_ = false;
};

// Compare MACs with wire::proofsEqual (constant time; Sha256Mac is the same type as wire::Mac).

}  // namespace poseidon::transport
