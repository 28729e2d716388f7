// The frame header: the fixed little-endian prefix of every frame on a byte-stream transport.
//
// Layout (56 bytes, little-endian):
//    0 u32 magic        'PSDN'
//    4 u16 version      kProtocolVersion
//    6 u8  type         FrameType
//    7 u8  flags        FrameFlags
//    8 u32 tag          message tag (kData/kCredit/kSendError) or region key (kWrite)
//   12 u32 length       payload bytes that follow this header
//   16 u64 seq          per-(pair, tag) message number, or per-pair write number
//   24 u64 offset       where this payload starts: in the message, or in the target region
//   32 u64 total        message length (kData, kSendError), posted room (kCredit), write length (kWrite)
//   40 u32 imm          immediate delivered with a write
//   44 u32 payload_crc  CRC32C of the payload when kFlagPayloadCrc is set, else 0
//   48 u32 reserved     must be 0
//   52 u32 header_crc   CRC32C of bytes 0..51
//
// With kFlagSealed (DeviceOptions::encrypt_frames, wire/frame_cipher.h) the payload is AES-GCM
// ciphertext and a 16-byte tag follows it, also on frames without payload: the tag covers the
// header as associated data, so no header or payload can be altered, replayed or dropped without
// the next tag failing. `length` counts the payload only.
//
// The decoder checks every field against limits before anything is allocated or copied.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace poseidon::transport::wire {

inline constexpr uint32_t kFrameMagic = 0x4E445350;  // "PSDN" read as little-endian bytes
// Both backends' hello carries it and a peer of another version is refused, naming both.
// 2: verbs writes longer than the device's limit end in a split-write notice (control type 8).
// 3: sealed frames (kFlagSealed), the hello's feature bits and the feature-mismatch verdict.
inline constexpr uint16_t kProtocolVersion = 3;
inline constexpr size_t kFrameHeaderSize = 56;

enum class FrameType : uint8_t {
  kData = 1,       // a piece of a two-sided message
  kCredit = 2,     // the receiver posted room for message (tag, seq) of `total` bytes
  kSendError = 3,  // message (tag, seq) of `total` bytes did not fit the posted room: fail it
  kWrite = 4,      // a piece of a one-sided write into region `tag` at `offset`
};

enum FrameFlags : uint8_t {
  kFlagPayloadCrc = 1u << 0,
  kFlagSealed = 1u << 1,  // AES-GCM ciphertext and a tag follow; never together with the CRC
};
inline constexpr uint8_t kKnownFlags = kFlagPayloadCrc | kFlagSealed;
inline constexpr size_t kFrameTagSize = 16;

struct FrameHeader {
  uint16_t version = kProtocolVersion;
  FrameType type = FrameType::kData;
  uint8_t flags = 0;
  uint32_t tag = 0;
  uint32_t length = 0;
  uint64_t seq = 0;
  uint64_t offset = 0;
  uint64_t total = 0;
  uint32_t imm = 0;
  uint32_t payload_crc = 0;
};

using EncodedHeader = std::array<uint8_t, kFrameHeaderSize>;

// Encodes magic, fields, reserved and header CRC.
void encodeHeader(const FrameHeader& header, uint8_t* out);

struct DecodeLimits {
  uint32_t max_payload = 64u << 20;  // largest payload of a single frame
};

// Decodes and validates one header. `peer` names the sender in error messages.
Result<FrameHeader> decodeHeader(const uint8_t* bytes, const DecodeLimits& limits, const std::string& peer);

const char* frameTypeName(FrameType type);

}  // namespace poseidon::transport::wire
