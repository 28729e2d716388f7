// Control messages of the verbs backend: the small SENDs that accompany RDMA WRITEs.
//
// Payload bytes always move by RDMA WRITE straight into registered memory; a control message
// posted after the writes on the same RC queue pair tells the target they landed (RC delivers
// a SEND only after every earlier WRITE on that QP is placed). One-sided writes need no control
// message: their last WRITE is an RDMA WRITE WITH IMM, completed at the target with the
// immediate once all the write's data is placed. The same credit protocol as the
// TCP backend, with addresses: a receive posts room, the sender writes into it.
// Except into staged regions (device memory behind a host copy, memory.h): the target must
// learn the range to copy it to the device, so such a write's plain WRITEs are followed by a
// staged-write notice naming address, rkey and length, with the immediate in `tag`.
// And a write longer than one RDMA WRITE carries (DeviceOptions::max_write_bytes): a WRITE WITH
// IMM would tell the target only the length of the last piece, so its plain WRITEs are followed
// by a split-write notice with the full length and the immediate, which the target needs to
// count what landed (traffic.h).
//
// Layout (kControlSize bytes, little-endian):
//    0 u32 magic   'PSVC'
//    4 u8  type    ControlType
//    5 u8  payload_length  bytes of `payload` used (handshake messages)
//    6 u16 reserved (0)
//    8 u32 ring_credits  receive slots the sender reposted since its last report
//   12 u32 tag     (kClearToSend, kDone, kSendError); the immediate (kStagedWrite, kSplitWrite)
//   16 u64 seq     message number per (pair, tag)
//   24 u64 total   room (kClearToSend), message length (kDone, kSendError), write length (kStagedWrite,
//                  kSplitWrite)
//   32 u64 address where the room starts (kClearToSend), where the write landed (kStagedWrite)
//   40 u32 rkey    of the room (kClearToSend), of the region written (kStagedWrite)
//   44 u32 reserved (0)
//   48 u32 crc     CRC32C of bytes 0..47 and the payload
//   52 u32 reserved (0)
//   56 ... payload (handshake messages, up to kMaxControlPayload bytes)
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace poseidon::transport::verbs {

inline constexpr uint32_t kControlMagic = 0x43565350;  // "PSVC"
inline constexpr size_t kControlHeaderSize = 56;
inline constexpr size_t kMaxControlPayload = 72;
inline constexpr size_t kControlSize = kControlHeaderSize + kMaxControlPayload;  // 128

enum class ControlType : uint8_t {
  kClearToSend = 1,  // receiver posted room for message (tag, seq)
  kDone = 2,         // message (tag, seq) of `total` bytes was written into the room
  kSendError = 3,    // message (tag, seq) of `total` bytes did not fit the room
  // 4 was a write notice; one-sided writes now carry their immediate in RDMA WRITE WITH IMM.
  kRingCredit = 5,   // only returns receive-ring credits
  kHandshake = 6,    // one of the wire handshake messages, in `payload`
  kStagedWrite = 7,  // a one-sided write into a staged region landed at (address, rkey, total)
  kSplitWrite = 8,   // a one-sided write of `total` bytes, cut into several WRITEs, landed
};

struct ControlMessage {
  ControlType type = ControlType::kRingCredit;
  uint32_t ring_credits = 0;
  uint32_t tag = 0;
  uint64_t seq = 0;
  uint64_t total = 0;
  uint64_t address = 0;
  uint32_t rkey = 0;
  uint8_t payload_length = 0;
  std::array<uint8_t, kMaxControlPayload> payload{};
};

void encodeControl(const ControlMessage& message, uint8_t* out);  // writes kControlSize bytes
// Checks magic, type, lengths, reserved fields and CRC; `length` is the received byte count.
Result<ControlMessage> decodeControl(const uint8_t* bytes, size_t length, const std::string& peer);

}  // namespace poseidon::transport::verbs
