#include "transport/wire/frame_cipher.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

#include "transport/wire/little_endian.h"

namespace poseidon::transport::wire {
namespace {
constexpr int kIvBytes = 12;
// OpenSSL counts in int: feed larger payloads in pieces of at most this.
constexpr size_t kMaxUpdate = size_t{1} << 30;

Status cryptoError(const char* what) {
  return makeStatus(StatusCode::kInternal, "AES-GCM {} failed in OpenSSL's libcrypto", what);
}
}  // namespace

struct FrameCipher::Ctx {
  EVP_CIPHER_CTX* evp = nullptr;
  ~Ctx() { EVP_CIPHER_CTX_free(evp); }
};

Result<std::unique_ptr<FrameCipher>> FrameCipher::create(const FrameKey& key, Direction direction) {
  auto ctx = std::make_unique<Ctx>();
  ctx->evp = EVP_CIPHER_CTX_new();
  if (ctx->evp == nullptr) return cryptoError("context allocation");
  // The key schedule is set once; each frame then sets only its nonce (start()).
  const int ok = direction == Direction::kSeal
                     ? EVP_EncryptInit_ex(ctx->evp, EVP_aes_256_gcm(), nullptr, key.data(), nullptr)
                     : EVP_DecryptInit_ex(ctx->evp, EVP_aes_256_gcm(), nullptr, key.data(), nullptr);
  if (ok != 1) return cryptoError("key set-up");
  return std::unique_ptr<FrameCipher>(new FrameCipher(std::move(ctx), direction));
}

FrameCipher::FrameCipher(std::unique_ptr<Ctx> ctx, Direction direction) : ctx_(std::move(ctx)), direction_(direction) {}
FrameCipher::~FrameCipher() = default;

Status FrameCipher::start(const uint8_t* header) {
  std::array<uint8_t, kIvBytes> iv{};
  storeLe64(iv.data() + 4, counter_++);
  const bool seal = direction_ == Direction::kSeal;
  if ((seal ? EVP_EncryptInit_ex(ctx_->evp, nullptr, nullptr, nullptr, iv.data())
            : EVP_DecryptInit_ex(ctx_->evp, nullptr, nullptr, nullptr, iv.data())) != 1) {
    return cryptoError("nonce set-up");
  }
  int n = 0;
  if ((seal ? EVP_EncryptUpdate(ctx_->evp, nullptr, &n, header, static_cast<int>(kFrameHeaderSize))
            : EVP_DecryptUpdate(ctx_->evp, nullptr, &n, header, static_cast<int>(kFrameHeaderSize))) != 1) {
    return cryptoError("associated data");
  }
  return Status::ok();
}

Status FrameCipher::seal(const uint8_t* header, std::span<const iovec> payload, uint8_t* out, uint8_t* tag) {
  POSEIDON_RETURN_IF_ERROR(start(header));
  for (const iovec& piece : payload) {
    const auto* in = static_cast<const uint8_t*>(piece.iov_base);
    for (size_t done = 0; done < piece.iov_len;) {
      const size_t take = std::min(piece.iov_len - done, kMaxUpdate);
      int n = 0;
      if (EVP_EncryptUpdate(ctx_->evp, out, &n, in + done, static_cast<int>(take)) != 1)
        return cryptoError("encryption");
      out += n;
      done += take;
    }
  }
  int n = 0;
  if (EVP_EncryptFinal_ex(ctx_->evp, out, &n) != 1) return cryptoError("encryption");
  if (EVP_CIPHER_CTX_ctrl(ctx_->evp, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kFrameTagSize), tag) != 1) {
    return cryptoError("tag");
  }
  return Status::ok();
}

Status FrameCipher::open(const uint8_t* header, const uint8_t* ciphertext, uint8_t* plaintext, size_t length,
                         const uint8_t* tag, const std::string& peer) {
  const uint64_t frame = counter_;
  POSEIDON_RETURN_IF_ERROR(start(header));
  for (size_t done = 0; done < length;) {
    const size_t take = std::min(length - done, kMaxUpdate);
    int n = 0;
    if (EVP_DecryptUpdate(ctx_->evp, plaintext + done, &n, ciphertext + done, static_cast<int>(take)) != 1) {
      return cryptoError("decryption");
    }
    done += take;
  }
  // OpenSSL takes the expected tag as non-const; it only reads it.
  std::array<uint8_t, kFrameTagSize> expected{};
  std::copy(tag, tag + kFrameTagSize, expected.begin());
  if (EVP_CIPHER_CTX_ctrl(ctx_->evp, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kFrameTagSize), expected.data()) != 1) {
    return cryptoError("tag");
  }
  int n = 0;
  uint8_t unused[16];
  if (EVP_DecryptFinal_ex(ctx_->evp, unused, &n) != 1) {
    // The plaintext was written before the tag could be checked: wipe it, so what an attacker
    // chose never stays in the destination (the frame fails either way).
    std::fill(plaintext, plaintext + length, uint8_t{0});
    return makeStatus(StatusCode::kProtocolError,
                      "sealed frame {} ({} payload bytes) from {} failed authentication: altered, dropped or "
                      "replayed on the way, or sealed with another key",
                      frame, length, peer);
  }
  return Status::ok();
}

}  // namespace poseidon::transport::wire
