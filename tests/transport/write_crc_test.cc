// Pair::writeWithCrc on the TCP backend: a write whose payload CRC32C the caller computed. The
// backend sends that CRC instead of reading the range again wherever one checked frame carries
// the write (takesPayloadCrc), so a wrong value must fail the receiver's check, naming the frame;
// where it cannot be used (several frames, sealed frames, device memory behind staging) it is
// ignored and the write arrives as write() would send it. The receiver's notification hands on
// the CRC it checked (Request::payloadCrc) where one frame carried it.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "tests/support/device_exchange.h"
#include "tests/support/fake_device_memory.h"
#include "tests/support/mesh.h"
#include "transport/wire/crc32c.h"

namespace poseidon::transport {
namespace {

using poseidon::testing::Buffer;
using poseidon::testing::firstMismatch;
using poseidon::testing::makeBuffer;
using poseidon::testing::makeMesh;
using poseidon::testing::Mesh;

constexpr auto kWait = std::chrono::seconds(10);

Mesh tcpMesh(DeviceOptions options) {
  options.backend = "tcp";
  auto mesh = makeMesh(2, options, "write-crc");
  if (!mesh) throw StatusError(mesh.status());
  return std::move(*mesh);
}

DeviceOptions checked(uint64_t stripe_bytes) {
  DeviceOptions options;
  options.payload_crc = true;
  options.stripe_bytes = stripe_bytes;
  options.secret = "write-crc-test-secret";
  return options;
}

// Rank 0 writes `length` bytes of its pattern into rank 1's buffer with `crc`: how the write,
// its notification and rank 1's bytes came out.
struct Outcome {
  Status write;
  Status notified;
  long long mismatch = -1;               // first byte of rank 1's buffer off the pattern, or -1
  std::optional<uint32_t> notified_crc;  // the notification's Request::payloadCrc
};
Outcome writeWith(Mesh& m, size_t length, uint32_t crc) {
  Buffer out = makeBuffer(m[0], length, 3);
  Buffer in = makeBuffer(m[1], length, 9);
  std::memset(in.bytes.data(), 0, length);
  auto note = m[1].pair(0).recvImm();
  auto write = m[0].pair(1).writeWithCrc(*out.region, 0, in.region->remote(), 0, length, 42, crc);
  Outcome o;
  o.write = write->wait(Deadline::after(kWait));
  o.notified = note->wait(Deadline::after(kWait));
  if (o.notified.isOk()) {
    EXPECT_EQ(note->imm(), 42u);
    o.mismatch = firstMismatch(in.bytes.data(), length, 3);
    o.notified_crc = note->payloadCrc();
  }
  return o;
}

uint32_t patternCrc(size_t length) {
  std::vector<uint8_t> bytes(length);
  poseidon::testing::fillPattern(bytes.data(), length, 3);
  return wire::crc32c(bytes.data(), length);
}

TEST(WriteWithCrc, TheRightCrcDeliversTheWriteAsWriteWould) {
  Mesh m = tcpMesh(checked(1 << 20));
  ASSERT_TRUE(m[0].pair(1).takesPayloadCrc(1 << 20));
  const size_t length = 300000;
  const Outcome o = writeWith(m, length, patternCrc(length));
  ASSERT_TRUE(o.write.isOk()) << o.write.toString();
  ASSERT_TRUE(o.notified.isOk()) << o.notified.toString();
  EXPECT_EQ(o.mismatch, -1);
  // The receiver hands on the CRC it checked, for a caller that sends the bytes on (the ring's
  // all-gather).
  EXPECT_EQ(o.notified_crc, patternCrc(length));
}

// The check that shows the caller's CRC is what travels: the backend's own would match.
TEST(WriteWithCrc, AWrongCrcFailsTheReceiversCheckNamingTheFrame) {
  Mesh m = tcpMesh(checked(1 << 20));
  const size_t length = 4096;
  const uint32_t right = patternCrc(length);
  const Outcome o = writeWith(m, length, right ^ 0x1u);
  ASSERT_FALSE(o.notified.isOk());
  const std::string why = o.notified.toString();
  EXPECT_NE(why.find("payload CRC"), std::string::npos) << why;
  EXPECT_NE(why.find("does not match"), std::string::npos) << why;
  EXPECT_NE(why.find("4096-byte"), std::string::npos) << why;
}

TEST(WriteWithCrc, AWriteOfSeveralFramesIgnoresItAndTakesItsOwn) {
  Mesh m = tcpMesh(checked(64 << 10));
  EXPECT_TRUE(m[0].pair(1).takesPayloadCrc(64 << 10));
  EXPECT_FALSE(m[0].pair(1).takesPayloadCrc((64 << 10) + 1));
  EXPECT_FALSE(m[0].pair(1).takesPayloadCrc(0));
  const size_t length = 200000;  // four frames
  const Outcome o = writeWith(m, length, 0xDEADBEEF);
  ASSERT_TRUE(o.notified.isOk()) << o.notified.toString();
  EXPECT_EQ(o.mismatch, -1);
  EXPECT_EQ(o.notified_crc, std::nullopt) << "no one CRC covers a write of several frames";
}

TEST(WriteWithCrc, WithoutPayloadChecksOrWithSealedFramesItIsIgnored) {
  for (const bool sealed : {false, true}) {
    DeviceOptions options = checked(1 << 20);
    options.payload_crc = sealed;  // off; or on, but the seal's tag covers the payload
    options.encrypt_frames = sealed;
    Mesh m = tcpMesh(options);
    EXPECT_FALSE(m[0].pair(1).takesPayloadCrc(4096)) << "sealed " << sealed;
    const Outcome o = writeWith(m, 4096, 0xDEADBEEF);
    ASSERT_TRUE(o.notified.isOk()) << "sealed " << sealed << ": " << o.notified.toString();
    EXPECT_EQ(o.mismatch, -1) << "sealed " << sealed;
    EXPECT_EQ(o.notified_crc, std::nullopt) << "sealed " << sealed;
  }
}

// Device memory goes out from its host staging copy, so a CRC the caller took of other bytes
// must not travel: a wrong one is ignored and the write arrives.
TEST(WriteWithCrc, DeviceMemoryBehindStagingIgnoresIt) {
  auto fake = std::make_shared<poseidon::testing::FakeDeviceMemory>();
  DeviceOptions options = checked(1 << 20);
  options.device_memory = fake;
  Mesh m = tcpMesh(options);
  const size_t length = 4096;
  poseidon::testing::DeviceBuffer out = poseidon::testing::makeDeviceBuffer(m[0], *fake, length, 3);
  ASSERT_TRUE(out.region->staged());
  Buffer in = makeBuffer(m[1], length, 9);
  auto note = m[1].pair(0).recvImm();
  auto write = m[0].pair(1).writeWithCrc(*out.region, 0, in.region->remote(), 0, length, 7, 0xDEADBEEF);
  ASSERT_TRUE(write->wait(Deadline::after(kWait)).isOk()) << write->status().toString();
  ASSERT_TRUE(note->wait(Deadline::after(kWait)).isOk()) << note->status().toString();
  EXPECT_EQ(firstMismatch(in.bytes.data(), length, 3), -1);
}

}  // namespace
}  // namespace poseidon::transport
