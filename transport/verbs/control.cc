#include "transport/verbs/control.h"

#include <cstring>

#include "transport/wire/crc32c.h"
#include "transport/wire/little_endian.h"

namespace poseidon::transport::verbs {

using wire::loadLe32;
using wire::loadLe64;
using wire::storeLe32;
using wire::storeLe64;

namespace {
uint32_t controlCrc(const uint8_t* bytes, size_t payload_length) {
  uint32_t crc = wire::crc32c(bytes, 48);
  return wire::crc32c(bytes + kControlHeaderSize, payload_length, crc);
}
}  // namespace

void encodeControl(const ControlMessage& m, uint8_t* out) {
  std::memset(out, 0, kControlSize);
  storeLe32(out + 0, kControlMagic);
  out[4] = static_cast<uint8_t>(m.type);
  out[5] = m.payload_length;
  storeLe32(out + 8, m.ring_credits);
  storeLe32(out + 12, m.tag);
  storeLe64(out + 16, m.seq);
  storeLe64(out + 24, m.total);
  storeLe64(out + 32, m.address);
  storeLe32(out + 40, m.rkey);
  std::memcpy(out + kControlHeaderSize, m.payload.data(), m.payload_length);
  storeLe32(out + 48, controlCrc(out, m.payload_length));
}

Result<ControlMessage> decodeControl(const uint8_t* in, size_t length, const std::string& peer) {
  if (length != kControlSize) {
    return makeStatus(StatusCode::kProtocolError, "control message of {} bytes from {}, expected {}", length, peer,
                      kControlSize);
  }
  const uint32_t magic = loadLe32(in);
  if (magic != kControlMagic) {
    return makeStatus(StatusCode::kProtocolError, "control message magic 0x{:08x} from {} is not 0x{:08x}", magic, peer,
                      kControlMagic);
  }
  ControlMessage m;
  const uint8_t type = in[4];
  const bool known = (type >= static_cast<uint8_t>(ControlType::kClearToSend) &&
                      type <= static_cast<uint8_t>(ControlType::kSendError)) ||
                     (type >= static_cast<uint8_t>(ControlType::kRingCredit) &&
                      type <= static_cast<uint8_t>(ControlType::kSplitWrite));
  if (!known) {
    return makeStatus(StatusCode::kProtocolError, "control message type {} from {} is not one of 1, 2, 3, 5, 6, 7, 8",
                      type, peer);
  }
  m.type = static_cast<ControlType>(type);
  m.payload_length = in[5];
  if (m.payload_length > kMaxControlPayload) {
    return makeStatus(StatusCode::kProtocolError, "control payload length {} from {} exceeds {}", m.payload_length,
                      peer, kMaxControlPayload);
  }
  if (in[6] != 0 || in[7] != 0 || loadLe32(in + 44) != 0 || loadLe32(in + 52) != 0) {
    return makeStatus(StatusCode::kProtocolError, "control message from {} has non-zero reserved fields", peer);
  }
  const uint32_t crc = loadLe32(in + 48);
  const uint32_t computed = controlCrc(in, m.payload_length);
  if (crc != computed) {
    return makeStatus(StatusCode::kProtocolError,
                      "control message CRC 0x{:08x} from {} does not match computed 0x{:08x}", crc, peer, computed);
  }
  m.ring_credits = loadLe32(in + 8);
  m.tag = loadLe32(in + 12);
  m.seq = loadLe64(in + 16);
  m.total = loadLe64(in + 24);
  m.address = loadLe64(in + 32);
  m.rkey = loadLe32(in + 40);
  std::memcpy(m.payload.data(), in + kControlHeaderSize, m.payload_length);
  return m;
}

}  // namespace poseidon::transport::verbs
