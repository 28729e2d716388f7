// Frame and handshake encoding: every field is checked before anything is allocated or copied.
#include <gtest/gtest.h>

#include <cstring>

#include "transport/memory.h"
#include "transport/wire/crc32c.h"
#include "transport/wire/frame.h"
#include "transport/wire/handshake.h"
#include "transport/wire/little_endian.h"

namespace poseidon::transport::wire {
namespace {

TEST(Crc32c, MatchesTheStandardCheckValue) {
  const char* digits = "123456789";
  EXPECT_EQ(crc32c(digits, 9), 0xE3069283u);
  // Continuation equals one pass.
  EXPECT_EQ(crc32c(digits + 4, 5, crc32c(digits, 4)), 0xE3069283u);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
}

FrameHeader sampleHeader() {
  FrameHeader h;
  h.type = FrameType::kWrite;
  h.tag = 0xDEADBEEF;
  h.length = 4096;
  h.seq = 0x0102030405060708ull;
  h.offset = 1ull << 40;
  h.total = 1ull << 41;
  h.imm = 77;
  return h;
}

TEST(Frame, RoundTripsEveryField) {
  EncodedHeader bytes;
  const FrameHeader h = sampleHeader();
  encodeHeader(h, bytes.data());
  EXPECT_EQ(loadLe32(bytes.data()), kFrameMagic);
  auto decoded = decodeHeader(bytes.data(), {}, "peer");
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded->type, h.type);
  EXPECT_EQ(decoded->tag, h.tag);
  EXPECT_EQ(decoded->length, h.length);
  EXPECT_EQ(decoded->seq, h.seq);
  EXPECT_EQ(decoded->offset, h.offset);
  EXPECT_EQ(decoded->total, h.total);
  EXPECT_EQ(decoded->imm, h.imm);
}

// Rewrites one field and fixes the header CRC, so the check under test is the one that fires.
EncodedHeader withField(size_t offset, uint32_t value, size_t width) {
  EncodedHeader bytes;
  encodeHeader(sampleHeader(), bytes.data());
  if (width == 1) bytes[offset] = static_cast<uint8_t>(value);
  if (width == 2) storeLe16(&bytes[offset], static_cast<uint16_t>(value));
  if (width == 4) storeLe32(&bytes[offset], value);
  storeLe32(&bytes[52], crc32c(bytes.data(), 52));
  return bytes;
}

void expectRejected(const EncodedHeader& bytes, const std::string& needle) {
  auto decoded = decodeHeader(bytes.data(), {}, "10.0.0.2:5001");
  ASSERT_FALSE(decoded.isOk()) << "expected rejection mentioning " << needle;
  EXPECT_EQ(decoded.status().code(), StatusCode::kProtocolError);
  EXPECT_NE(decoded.status().message().find(needle), std::string::npos) << decoded.status().message();
  EXPECT_NE(decoded.status().message().find("10.0.0.2:5001"), std::string::npos) << "must name the peer";
}

TEST(Frame, RejectsBadMagic) { expectRejected(withField(0, 0x12345678, 4), "magic 0x12345678"); }
TEST(Frame, RejectsBadVersion) { expectRejected(withField(4, 9, 2), "version 9"); }
TEST(Frame, RejectsUnknownType) { expectRejected(withField(6, 42, 1), "type 42"); }
TEST(Frame, RejectsUnknownFlags) { expectRejected(withField(7, 0x80, 1), "flags 0x80"); }
TEST(Frame, RejectsOversizeLength) { expectRejected(withField(12, 0xC0000000u, 4), "length 3221225472 exceeds limit"); }
TEST(Frame, RejectsNonZeroReserved) { expectRejected(withField(48, 1, 4), "reserved"); }

TEST(Frame, RejectsHeaderCrcMismatch) {
  EncodedHeader bytes;
  encodeHeader(sampleHeader(), bytes.data());
  bytes[20] ^= 0x01;  // a flipped bit in seq
  expectRejected(bytes, "CRC");
}

TEST(Frame, RejectsDataBeyondItsMessage) {
  FrameHeader h;
  h.type = FrameType::kData;
  h.length = 100;
  h.offset = 950;
  h.total = 1000;
  EncodedHeader bytes;
  encodeHeader(h, bytes.data());
  expectRejected(bytes, "outside its message");
}

TEST(Frame, RejectsControlFrameWithPayload) {
  FrameHeader h;
  h.type = FrameType::kCredit;
  h.length = 8;
  EncodedHeader bytes;
  encodeHeader(h, bytes.data());
  expectRejected(bytes, "credit frame");
}

TEST(Handshake, ProofsDependOnSecretAndNonce) {
  ClientHello hello;
  hello.version = kProtocolVersion;
  hello.nonce = randomNonce();
  const auto bytes = encodeClientHello(hello);
  const Nonce server_nonce = randomNonce();
  const Mac a = computeProof("s1", Role::kClient, bytes.data(), server_nonce);
  EXPECT_TRUE(proofsEqual(a, computeProof("s1", Role::kClient, bytes.data(), server_nonce)));
  EXPECT_FALSE(proofsEqual(a, computeProof("s2", Role::kClient, bytes.data(), server_nonce)));
  EXPECT_FALSE(proofsEqual(a, computeProof("s1", Role::kServer, bytes.data(), server_nonce)));
  EXPECT_FALSE(proofsEqual(a, computeProof("s1", Role::kClient, bytes.data(), randomNonce())));
}

TEST(Handshake, HelloRoundTripsAndRejectsForeignBytes) {
  ClientHello hello;
  hello.version = 1;
  hello.context_id = contextId("job");
  hello.src_rank = 3;
  hello.dst_rank = 1;
  hello.stream = 2;
  hello.num_streams = 4;
  auto bytes = encodeClientHello(hello);
  auto decoded = decodeClientHello(bytes.data(), "p");
  ASSERT_TRUE(decoded.isOk());
  EXPECT_EQ(decoded->context_id, hello.context_id);
  EXPECT_EQ(decoded->src_rank, 3u);
  std::memcpy(bytes.data(), "GET ", 4);  // an HTTP client, say
  auto foreign = decodeClientHello(bytes.data(), "p");
  ASSERT_FALSE(foreign.isOk());
  EXPECT_NE(foreign.status().message().find("not a Poseidon peer"), std::string::npos);
}

TEST(RemoteDescriptor, RoundTripsAndNamesWhatIsWrong) {
  RemoteDescriptor d;
  d.backend = BackendTag::kVerbs;
  d.key = 0xABCD;
  d.address = 0x7f0000001000;
  d.length = 1ull << 33;
  auto bytes = d.serialize();
  auto parsed = RemoteDescriptor::parse(bytes);
  ASSERT_TRUE(parsed.isOk());
  EXPECT_EQ(parsed->key, d.key);
  EXPECT_EQ(parsed->address, d.address);
  EXPECT_EQ(parsed->length, d.length);
  EXPECT_EQ(parsed->backend, BackendTag::kVerbs);
  auto short_parse = RemoteDescriptor::parse(std::span<const uint8_t>(bytes.data(), 10));
  EXPECT_NE(short_parse.status().message().find("10 bytes"), std::string::npos);
  bytes[5] = 9;
  EXPECT_NE(RemoteDescriptor::parse(bytes).status().message().find("backend 9"), std::string::npos);
}

}  // namespace
}  // namespace poseidon::transport::wire
