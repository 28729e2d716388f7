// Wire format of the TCP store: a client sends one request and reads its response before the next.
//
// Request:  magic u32 | version u16 | op u16 | key_bytes u32 | value_bytes u32 | key | value | mac
// Response: magic u32 | version u16 | code u16 | value_bytes u32 | value | mac
// All integers little-endian. The connection opens with the server's greeting (a response without
// a mac) and the client's hello; store_auth.h has the handshake and what each mac covers. The body of an add request is
// the delta as int64 (8 bytes); the body of an add response is the new value as int64; the body of an error response
// (code != kOk) is the message. Headers are checked field by field before anything is allocated.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace poseidon::transport::bootstrap {

inline constexpr uint32_t kStoreMagic = 0x52545350;  // "PSTR" in memory order
inline constexpr uint16_t kStoreVersion = 2;         // 2: authenticated (store_auth.h)
inline constexpr size_t kRequestHeaderBytes = 16;
inline constexpr size_t kResponseHeaderBytes = 12;
inline constexpr size_t kCounterBytes = 8;
// An error message is text for a log line; anything longer is a broken peer.
inline constexpr size_t kMaxErrorMessageBytes = 64 << 10;

// kHello opens a connection: no key, the client's nonce as value (store_auth.h).
enum class StoreOp : uint16_t { kSet = 1, kGet = 2, kAdd = 3, kHello = 4 };
const char* storeOpName(StoreOp op);

struct RequestHeader {
  uint32_t magic = kStoreMagic;
  uint16_t version = kStoreVersion;
  uint16_t op = 0;
  uint32_t key_bytes = 0;
  uint32_t value_bytes = 0;
};

struct ResponseHeader {
  uint32_t magic = kStoreMagic;
  uint16_t version = kStoreVersion;
  uint16_t code = 0;  // a StatusCode
  uint32_t value_bytes = 0;
};

RequestHeader decodeRequestHeader(const uint8_t* bytes);    // kRequestHeaderBytes of them
ResponseHeader decodeResponseHeader(const uint8_t* bytes);  // kResponseHeaderBytes of them

// kProtocolError naming the bad field, its value and what was expected.
Status validateRequestHeader(const RequestHeader& header);
Status validateResponseHeader(const ResponseHeader& header);

// Header and body in one buffer, ready to send; the caller appends the mac (store_auth.h).
std::vector<uint8_t> encodeRequest(StoreOp op, const std::string& key, const std::vector<uint8_t>& value);
std::vector<uint8_t> encodeResponse(StatusCode code, const std::vector<uint8_t>& value);
std::vector<uint8_t> encodeErrorResponse(const Status& status);

std::array<uint8_t, kCounterBytes> encodeInt64(int64_t value);
int64_t decodeInt64(const uint8_t* bytes);  // kCounterBytes of them

}  // namespace poseidon::transport::bootstrap
