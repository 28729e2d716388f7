#include "transport/bootstrap/store_protocol.h"

#include <algorithm>

#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_auth.h"

namespace poseidon::transport::bootstrap {

namespace {

// Byte by byte, so the format is little-endian whatever the host is.
void putLE(std::vector<uint8_t>& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint64_t getLE(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{in[i]} << (8 * i);
  return value;
}

Status checkMagicVersion(const char* what, uint32_t magic, uint16_t version) {
  if (magic != kStoreMagic) {
    return makeStatus(StatusCode::kProtocolError, "{} magic 0x{:08x}, expected 0x{:08x}", what, magic, kStoreMagic);
  }
  if (version != kStoreVersion) {
    return makeStatus(StatusCode::kProtocolError, "{} version {}, expected {}", what, version, kStoreVersion);
  }
  return Status::ok();
}

}  // namespace

const char* storeOpName(StoreOp op) {
  switch (op) {
    case StoreOp::kSet: return "set";
    case StoreOp::kGet: return "get";
    case StoreOp::kAdd: return "add";
    case StoreOp::kHello: return "hello";
  }
  return "unknown";
}

RequestHeader decodeRequestHeader(const uint8_t* bytes) {
  RequestHeader h;
  h.magic = static_cast<uint32_t>(getLE(bytes, 4));
  h.version = static_cast<uint16_t>(getLE(bytes + 4, 2));
  h.op = static_cast<uint16_t>(getLE(bytes + 6, 2));
  h.key_bytes = static_cast<uint32_t>(getLE(bytes + 8, 4));
  h.value_bytes = static_cast<uint32_t>(getLE(bytes + 12, 4));
  return h;
}

ResponseHeader decodeResponseHeader(const uint8_t* bytes) {
  ResponseHeader h;
  h.magic = static_cast<uint32_t>(getLE(bytes, 4));
  h.version = static_cast<uint16_t>(getLE(bytes + 4, 2));
  h.code = static_cast<uint16_t>(getLE(bytes + 6, 2));
  h.value_bytes = static_cast<uint32_t>(getLE(bytes + 8, 4));
  return h;
}

Status validateRequestHeader(const RequestHeader& h) {
  POSEIDON_RETURN_IF_ERROR(checkMagicVersion("request", h.magic, h.version));
  const auto op = static_cast<StoreOp>(h.op);
  if (op != StoreOp::kSet && op != StoreOp::kGet && op != StoreOp::kAdd && op != StoreOp::kHello) {
    return makeStatus(StatusCode::kProtocolError, "request op {}, expected 1 (set), 2 (get), 3 (add) or 4 (hello)",
                      h.op);
  }
  if (op == StoreOp::kHello && (h.key_bytes != 0 || h.value_bytes != kStoreNonceBytes)) {
    return makeStatus(StatusCode::kProtocolError,
                      "hello request with key length {} and value length {}, expected 0 and {}", h.key_bytes,
                      h.value_bytes, kStoreNonceBytes);
  }
  if (h.key_bytes > kMaxKeyBytes) {
    return makeStatus(StatusCode::kProtocolError, "{} request key length {} exceeds limit {}", storeOpName(op),
                      h.key_bytes, kMaxKeyBytes);
  }
  // Each op has exactly one legal body size except set, which is bounded.
  const size_t expected = op == StoreOp::kAdd ? kCounterBytes : op == StoreOp::kHello ? kStoreNonceBytes : 0;
  if (op == StoreOp::kSet) {
    if (h.value_bytes > kMaxValueBytes) {
      return makeStatus(StatusCode::kProtocolError, "set request value length {} exceeds limit {}", h.value_bytes,
                        kMaxValueBytes);
    }
  } else if (h.value_bytes != expected) {
    return makeStatus(StatusCode::kProtocolError, "{} request value length {}, expected {}", storeOpName(op),
                      h.value_bytes, expected);
  }
  return Status::ok();
}

Status validateResponseHeader(const ResponseHeader& h) {
  POSEIDON_RETURN_IF_ERROR(checkMagicVersion("response", h.magic, h.version));
  if (h.code > static_cast<uint16_t>(StatusCode::kInternal)) {
    return makeStatus(StatusCode::kProtocolError, "response status code {}, expected at most {}", h.code,
                      static_cast<int>(StatusCode::kInternal));
  }
  const size_t limit = h.code == 0 ? kMaxValueBytes : kMaxErrorMessageBytes;
  if (h.value_bytes > limit) {
    return makeStatus(StatusCode::kProtocolError, "response value length {} exceeds limit {}", h.value_bytes, limit);
  }
  return Status::ok();
}

std::vector<uint8_t> encodeRequest(StoreOp op, const std::string& key, const std::vector<uint8_t>& value) {
  std::vector<uint8_t> out;
  out.reserve(kRequestHeaderBytes + key.size() + value.size());
  putLE(out, kStoreMagic, 4);
  putLE(out, kStoreVersion, 2);
  putLE(out, static_cast<uint16_t>(op), 2);
  putLE(out, key.size(), 4);
  putLE(out, value.size(), 4);
  out.insert(out.end(), key.begin(), key.end());
  out.insert(out.end(), value.begin(), value.end());
  return out;
}

std::vector<uint8_t> encodeResponse(StatusCode code, const std::vector<uint8_t>& value) {
  std::vector<uint8_t> out;
  out.reserve(kResponseHeaderBytes + value.size());
  putLE(out, kStoreMagic, 4);
  putLE(out, kStoreVersion, 2);
  putLE(out, static_cast<uint16_t>(code), 2);
  putLE(out, value.size(), 4);
  out.insert(out.end(), value.begin(), value.end());
  return out;
}

std::vector<uint8_t> encodeErrorResponse(const Status& status) {
  const std::string& message = status.message();
  const size_t size = std::min(message.size(), kMaxErrorMessageBytes);
  return encodeResponse(status.code(), std::vector<uint8_t>(message.begin(), message.begin() + size));
}

std::array<uint8_t, kCounterBytes> encodeInt64(int64_t value) {
  std::array<uint8_t, kCounterBytes> out{};
  for (size_t i = 0; i < kCounterBytes; ++i) out[i] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i));
  return out;
}

int64_t decodeInt64(const uint8_t* bytes) { return static_cast<int64_t>(getLE(bytes, kCounterBytes)); }

}  // namespace poseidon::transport::bootstrap
