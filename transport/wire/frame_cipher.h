// AES-256-GCM sealing of frames, one direction of one connection (DeviceOptions::encrypt_frames).
//
// Each side of a connection holds a sealer for what it sends and an opener for what it receives,
// keyed by that direction's key from the handshake (wire::deriveFrameKeys). The 96-bit GCM nonce
// is the frame's number on the connection, counted by both sides and never sent: frames go and
// are opened in order on one TCP stream, so a dropped, repeated, reordered or injected frame
// makes the next tag fail. The 56-byte header is associated data (authenticated, readable: a
// frame's type, sizes and offsets are visible on the wire, its payload is not).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/status.h"
#include "transport/wire/frame.h"
#include "transport/wire/handshake.h"

namespace poseidon::transport::wire {

class FrameCipher {
 public:
  enum class Direction { kSeal, kOpen };
  static Result<std::unique_ptr<FrameCipher>> create(const FrameKey& key, Direction direction);
  ~FrameCipher();
  FrameCipher(const FrameCipher&) = delete;
  FrameCipher& operator=(const FrameCipher&) = delete;

  // Seals the next frame: `header` (kFrameHeaderSize bytes) as associated data, the payload
  // pieces encrypted into `out` (their total length), the tag into `tag` (kFrameTagSize bytes).
  Status seal(const uint8_t* header, std::span<const iovec> payload, uint8_t* out, uint8_t* tag);
  // Opens the next frame: `length` bytes of ciphertext decrypted into `plaintext` (may be the
  // same memory). A tag that does not match is a kProtocolError naming `peer`, and `plaintext`
  // is then zeroed (GCM decrypts before the tag can be checked).
  Status open(const uint8_t* header, const uint8_t* ciphertext, uint8_t* plaintext, size_t length, const uint8_t* tag,
              const std::string& peer);

  uint64_t framesDone() const { return counter_; }

 private:
  struct Ctx;
  FrameCipher(std::unique_ptr<Ctx> ctx, Direction direction);
  Status start(const uint8_t* header);

  std::unique_ptr<Ctx> ctx_;
  Direction direction_;
  uint64_t counter_ = 0;
};

}  // namespace poseidon::transport::wire
