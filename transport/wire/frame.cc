#include "transport/wire/frame.h"

#include "transport/wire/crc32c.h"
#include "transport/wire/little_endian.h"

namespace poseidon::transport::wire {

void encodeHeader(const FrameHeader& h, uint8_t* out) {
  storeLe32(out + 0, kFrameMagic);
  storeLe16(out + 4, h.version);
  out[6] = static_cast<uint8_t>(h.type);
  out[7] = h.flags;
  storeLe32(out + 8, h.tag);
  storeLe32(out + 12, h.length);
  storeLe64(out + 16, h.seq);
  storeLe64(out + 24, h.offset);
  storeLe64(out + 32, h.total);
  storeLe32(out + 40, h.imm);
  storeLe32(out + 44, h.payload_crc);
  storeLe32(out + 48, 0);
  storeLe32(out + 52, crc32c(out, 52));
}

const char* frameTypeName(FrameType type) {
  switch (type) {
    case FrameType::kData: return "data";
    case FrameType::kCredit: return "credit";
    case FrameType::kSendError: return "send-error";
    case FrameType::kWrite: return "write";
  }
  return "unknown";
}

Result<FrameHeader> decodeHeader(const uint8_t* in, const DecodeLimits& limits, const std::string& peer) {
  const uint32_t magic = loadLe32(in + 0);
  if (magic != kFrameMagic) {
    return makeStatus(StatusCode::kProtocolError, "frame magic 0x{:08x} from {} is not 0x{:08x}", magic, peer,
                      kFrameMagic);
  }
  const uint32_t header_crc = loadLe32(in + 52);
  const uint32_t computed = crc32c(in, 52);
  if (header_crc != computed) {
    return makeStatus(StatusCode::kProtocolError, "frame header CRC 0x{:08x} from {} does not match computed 0x{:08x}",
                      header_crc, peer, computed);
  }
  FrameHeader h;
  h.version = loadLe16(in + 4);
  if (h.version != kProtocolVersion) {
    return makeStatus(StatusCode::kProtocolError, "frame version {} from {} is not the expected {}", h.version, peer,
                      kProtocolVersion);
  }
  const uint8_t type = in[6];
  if (type < static_cast<uint8_t>(FrameType::kData) || type > static_cast<uint8_t>(FrameType::kWrite)) {
    return makeStatus(StatusCode::kProtocolError, "frame type {} from {} is not one of 1..4", type, peer);
  }
  h.type = static_cast<FrameType>(type);
  h.flags = in[7];
  if ((h.flags & ~kKnownFlags) != 0) {
    return makeStatus(StatusCode::kProtocolError, "frame flags 0x{:02x} from {} has bits outside 0x{:02x}", h.flags,
                      peer, kKnownFlags);
  }
  h.tag = loadLe32(in + 8);
  h.length = loadLe32(in + 12);
  h.seq = loadLe64(in + 16);
  h.offset = loadLe64(in + 24);
  h.total = loadLe64(in + 32);
  h.imm = loadLe32(in + 40);
  h.payload_crc = loadLe32(in + 44);
  const uint32_t reserved = loadLe32(in + 48);
  if (reserved != 0) {
    return makeStatus(StatusCode::kProtocolError, "frame reserved field 0x{:08x} from {} is not 0", reserved, peer);
  }
  if (h.length > limits.max_payload) {
    return makeStatus(StatusCode::kProtocolError, "frame length {} exceeds limit {} from {}", h.length,
                      limits.max_payload, peer);
  }
  const bool control = h.type == FrameType::kCredit || h.type == FrameType::kSendError;
  if (control && h.length != 0) {
    return makeStatus(StatusCode::kProtocolError, "{} frame from {} carries {} payload bytes, expected 0",
                      frameTypeName(h.type), peer, h.length);
  }
  if (h.type == FrameType::kData && (h.offset > h.total || h.length > h.total - h.offset)) {
    return makeStatus(StatusCode::kProtocolError,
                      "data frame from {} covers bytes [{}, {}+{}) outside its message of {} bytes", peer, h.offset,
                      h.offset, h.length, h.total);
  }
  if (h.type == FrameType::kWrite && h.length > h.total) {
    return makeStatus(StatusCode::kProtocolError, "write frame from {} carries {} bytes of a write of {} bytes", peer,
                      h.length, h.total);
  }
  if ((h.flags & kFlagPayloadCrc) && (h.flags & kFlagSealed)) {
    return makeStatus(StatusCode::kProtocolError,
                      "frame from {} has both the payload-CRC and the sealed flag (flags 0x{:02x}); a sealed frame's "
                      "tag replaces the CRC",
                      peer, h.flags);
  }
  if ((h.flags & kFlagPayloadCrc) == 0 && h.payload_crc != 0) {
    return makeStatus(StatusCode::kProtocolError, "frame from {} has payload CRC 0x{:08x} without the CRC flag", peer,
                      h.payload_crc);
  }
  return h;
}

}  // namespace poseidon::transport::wire
