// A misbehaving peer on the TCP backend: it passes the handshake as rank 2, then sends frames
// that break the protocol. The pair to it must fail with a reason naming the bad field, its
// pending requests must fail, and the pair between the two honest ranks must go on.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <algorithm>
#include <thread>

#include "tests/support/mesh.h"
#include "tests/transport/bad_peer_mesh.h"
#include "transport/bootstrap/file_store.h"
#include "transport/common/socket.h"
#include "transport/tcp/handshake.h"
#include "transport/wire/crc32c.h"
#include "transport/wire/frame.h"
#include "transport/wire/little_endian.h"

namespace poseidon::transport {
namespace {

using poseidon::testing::Buffer;
using poseidon::testing::makeBuffer;
using poseidon::testing::Mesh;

using badpeer::BadPeerMesh;
using badpeer::makeBadPeerMesh;
using badpeer::sendRaw;
constexpr const char* kSecret = badpeer::kBadPeerSecret;

std::vector<uint8_t> frame(const wire::FrameHeader& h, size_t payload = 0) {
  std::vector<uint8_t> bytes(wire::kFrameHeaderSize + payload, 0xAB);
  wire::encodeHeader(h, bytes.data());
  return bytes;
}

struct BadFrameCase {
  std::string name;
  std::function<std::vector<uint8_t>()> make;
  std::string expected;  // a piece of the failure message
};

void PrintTo(const BadFrameCase& c, std::ostream* os) { *os << c.name; }

std::vector<BadFrameCase> badFrames() {
  auto fixCrc = [](std::vector<uint8_t> b) {
    wire::storeLe32(&b[52], wire::crc32c(b.data(), 52));
    return b;
  };
  return {
      {"BadMagic",
       [=] {
         wire::FrameHeader h;
         auto b = frame(h);
         wire::storeLe32(&b[0], 0x11111111);
         return b;
       },
       "magic 0x11111111"},
      {"BadVersion",
       [=] {
         wire::FrameHeader h;
         auto b = frame(h);
         wire::storeLe16(&b[4], 7);
         return fixCrc(b);
       },
       "version 7"},
      {"OversizeLength",
       [=] {
         wire::FrameHeader h;
         auto b = frame(h);
         wire::storeLe32(&b[12], 0xC0000000u);
         return fixCrc(b);
       },
       "exceeds limit"},
      {"BadHeaderCrc",
       [=] {
         wire::FrameHeader h;
         auto b = frame(h);
         b[9] ^= 0xFF;
         return b;
       },
       "header CRC"},
      {"BadPayloadCrc",
       [=] {
         wire::FrameHeader h;
         h.type = wire::FrameType::kData;
         h.tag = 5;
         h.length = 64;
         h.total = 64;
         h.flags = wire::kFlagPayloadCrc;
         h.payload_crc = 0x12345678;
         return frame(h, 64);
       },
       "payload CRC"},
      {"DataWithoutCredit",
       [=] {
         wire::FrameHeader h;
         h.type = wire::FrameType::kData;
         h.tag = 99;
         h.length = 8;
         h.total = 8;
         return frame(h, 8);
       },
       "without a posted receive"},
      {"WriteOutsideRegion",
       [=] {
         wire::FrameHeader h;
         h.type = wire::FrameType::kWrite;
         h.tag = 1;  // the first registered region's key
         h.length = 16;
         h.total = 16;
         h.offset = 1 << 20;
         return frame(h, 16);
       },
       "outside its"},
      // What a relay dropping one frame leaves: named as a gap at once, not found as a time-out.
      {"WriteNumberSkipped",
       [=] {
         wire::FrameHeader h;
         h.type = wire::FrameType::kWrite;
         h.tag = 1;
         h.seq = 1;  // write 0 never sent
         h.length = 16;
         h.total = 16;
         return frame(h, 16);
       },
       "write 0 is missing all of its bytes"},
      {"WriteFrameMissing",
       [=] {
         wire::FrameHeader h;
         h.type = wire::FrameType::kWrite;
         h.tag = 1;
         h.seq = 0;
         h.length = 16;
         h.total = 32;  // its second frame never comes
         std::vector<uint8_t> bytes = frame(h, 16);
         h.seq = 1;
         h.total = 16;
         const std::vector<uint8_t> next = frame(h, 16);
         bytes.insert(bytes.end(), next.begin(), next.end());
         return bytes;
       },
       "write 0 is missing 16 of 32 of its bytes"},
  };
}

class BadPeer : public ::testing::TestWithParam<BadFrameCase> {};

TEST_P(BadPeer, ClosesOnlyThatConnectionWithAReason) {
  BadPeerMesh m = makeBadPeerMesh();
  Buffer in = makeBuffer(m.mesh[0], 4096);  // region key 1 on rank 0
  auto pending = m.mesh[0].pair(2).recv(5, *in.region, 0, 64);
  // Consume the credit rank 0 sent, as a real peer would, then misbehave.
  uint8_t credit[wire::kFrameHeaderSize];
  ASSERT_TRUE(recvAll(m.to_rank0.get(), credit, sizeof(credit), Deadline::after(std::chrono::seconds(5)), "r0").isOk());
  sendRaw(m.to_rank0.get(), GetParam().make());
  Status st = pending->wait(Deadline::after(std::chrono::seconds(5)));
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find(GetParam().expected), std::string::npos) << st.toString();
  EXPECT_NE(m.mesh[0].pair(2).status().message().find("rank 2"), std::string::npos)
      << m.mesh[0].pair(2).status().toString();
  // The socket to the bad peer is closed by rank 0.
  uint8_t byte;
  Status closed = recvAll(m.to_rank0.get(), &byte, 1, Deadline::after(std::chrono::seconds(5)), "rank 0");
  EXPECT_EQ(closed.code(), StatusCode::kConnectionError) << closed.toString();
  // Ranks 0 and 1 go on.
  Buffer out = makeBuffer(m.mesh[1], 1000, 3);
  auto r = m.mesh[0].pair(1).recv(0, *in.region, 0, 1000);
  auto s = m.mesh[1].pair(0).send(0, *out.region, 0, 1000);
  ASSERT_TRUE(r->wait(Deadline::after(std::chrono::seconds(10))).isOk()) << r->status().toString();
  ASSERT_TRUE(s->wait(Deadline::after(std::chrono::seconds(10))).isOk()) << s->status().toString();
  EXPECT_EQ(poseidon::testing::firstMismatch(in.bytes.data(), 1000, 3), -1);
}

INSTANTIATE_TEST_SUITE_P(Frames, BadPeer, ::testing::ValuesIn(badFrames()),
                         [](const auto& param_info) { return param_info.param.name; });

// A write arriving while its region is destroyed (a collective that timed out, a job torn down):
// once the region's destructor returns, none of its memory is touched any more, as after
// ibv_dereg_mr, and the pair fails naming the region instead of writing into freed memory.
TEST(BadPeer, AWriteWhoseRegionIsDeregisteredMidwayNeverTouchesItsMemoryAgain) {
  constexpr size_t kBytes = 64 * 1024;
  BadPeerMesh m = makeBadPeerMesh();
  Buffer in = makeBuffer(m.mesh[0], kBytes);  // region key 1 on rank 0
  Buffer watch = makeBuffer(m.mesh[0], 64);
  auto pending = m.mesh[0].pair(2).recv(5, *watch.region, 0, 64);  // fails with the pair
  uint8_t credit[wire::kFrameHeaderSize];
  ASSERT_TRUE(recvAll(m.to_rank0.get(), credit, sizeof(credit), Deadline::after(std::chrono::seconds(5)), "r0").isOk());
  wire::FrameHeader h;
  h.type = wire::FrameType::kWrite;
  h.tag = 1;
  h.length = kBytes;
  h.total = kBytes;
  std::vector<uint8_t> bytes = frame(h, kBytes);
  const size_t half = wire::kFrameHeaderSize + kBytes / 2;
  sendRaw(m.to_rank0.get(), std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(half)));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // most likely read by now; either way holds
  in.region.reset();
  std::fill(in.bytes.begin(), in.bytes.end(), uint8_t{0x11});
  sendRaw(m.to_rank0.get(), std::vector<uint8_t>(bytes.begin() + static_cast<long>(half), bytes.end()));
  Status st = pending->wait(Deadline::after(std::chrono::seconds(5)));
  EXPECT_EQ(st.code(), StatusCode::kConnectionError) << st.toString();
  EXPECT_NE(st.message().find("region key 1 was deregistered while rank 2"), std::string::npos) << st.toString();
  EXPECT_EQ(std::count(in.bytes.begin(), in.bytes.end(), uint8_t{0x11}), static_cast<long>(kBytes))
      << "bytes of the write landed after its region was deregistered";
}

// The payload CRC is summed piece by piece as the payload lands (stream.cc readPayload), so a
// write whose bytes come in two reads must check alike: with the right CRC it lands whole; with
// one byte flipped in its second part the pair fails naming the CRC.
TEST(BadPeer, APayloadCrcSummedOverTwoReadsAcceptsTheRightBytesAndNamesOneFlipped) {
  constexpr size_t kBytes = 64 * 1024;
  for (const bool flip : {false, true}) {
    SCOPED_TRACE(flip ? "one byte flipped" : "intact");
    BadPeerMesh m = makeBadPeerMesh();
    Buffer in = makeBuffer(m.mesh[0], kBytes);  // region key 1 on rank 0
    Buffer watch = makeBuffer(m.mesh[0], 64);
    auto pending = m.mesh[0].pair(2).recv(5, *watch.region, 0, 64);  // fails with the pair
    uint8_t credit[wire::kFrameHeaderSize];
    ASSERT_TRUE(
        recvAll(m.to_rank0.get(), credit, sizeof(credit), Deadline::after(std::chrono::seconds(5)), "r0").isOk());
    std::vector<uint8_t> payload(kBytes);
    for (size_t i = 0; i < kBytes; ++i) payload[i] = static_cast<uint8_t>(i * 7 + 1);
    wire::FrameHeader h;
    h.type = wire::FrameType::kWrite;
    h.tag = 1;
    h.length = kBytes;
    h.total = kBytes;
    h.flags = wire::kFlagPayloadCrc;
    h.payload_crc = wire::crc32c(payload.data(), kBytes);
    std::vector<uint8_t> bytes = frame(h, kBytes);
    std::copy(payload.begin(), payload.end(), bytes.begin() + wire::kFrameHeaderSize);
    if (flip) bytes[wire::kFrameHeaderSize + kBytes * 3 / 4] ^= 0x10;
    const size_t half = wire::kFrameHeaderSize + kBytes / 2;
    sendRaw(m.to_rank0.get(), std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(half)));
    // The frame is larger than the stream's 64 KiB inbox, so part of the payload is copied from
    // the inbox and part read straight into the region whatever the timing; the pause makes the
    // first half a read of its own besides.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    sendRaw(m.to_rank0.get(), std::vector<uint8_t>(bytes.begin() + static_cast<long>(half), bytes.end()));
    if (flip) {
      Status st = pending->wait(Deadline::after(std::chrono::seconds(5)));
      EXPECT_EQ(st.code(), StatusCode::kProtocolError) << st.toString();
      EXPECT_NE(st.message().find("payload CRC"), std::string::npos) << st.toString();
      EXPECT_NE(st.message().find("65536-byte write frame from rank 2"), std::string::npos) << st.toString();
      continue;
    }
    // A message behind the write on the same stream: once it arrives, the write was taken.
    wire::FrameHeader next;
    next.type = wire::FrameType::kData;
    next.tag = 5;
    next.length = 64;
    next.total = 64;
    sendRaw(m.to_rank0.get(), frame(next, 64));
    ASSERT_TRUE(pending->wait(Deadline::after(std::chrono::seconds(5))).isOk()) << pending->status().toString();
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), in.bytes.begin())) << "the write did not land whole";
  }
}

// A peer that sends its last write and closes (a job's last message, then exit) shuts all its
// streams at once, but this side may read one stream's end before another stream's last frames:
// the pair fails only once every stream has ended, so nothing sent before the close is lost.
// Here stream 0 ends first and stays ended for a while before stream 1's frame comes.
TEST(BadPeer, AStreamThatEndsFirstDoesNotDropFramesStillOnTheOthers) {
  DeviceOptions options;
  options.streams = 2;
  BadPeerMesh m = makeBadPeerMesh(options);
  ASSERT_EQ(m.more_to_rank0.size(), 1u);
  Buffer in = makeBuffer(m.mesh[0], 4096);  // region key 1 on rank 0
  auto notified = m.mesh[0].pair(2).recvImm();
  ASSERT_EQ(::shutdown(m.to_rank0.get(), SHUT_WR), 0);          // stream 0: FIN, as a closing peer sends
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // read by rank 0 by now
  ASSERT_TRUE(m.mesh[0].pair(2).status().isOk()) << m.mesh[0].pair(2).status().toString();
  wire::FrameHeader h;
  h.type = wire::FrameType::kWrite;
  h.tag = 1;
  h.length = 64;
  h.total = 64;
  h.imm = 0x5eed;
  std::vector<uint8_t> bytes = frame(h, 64);
  std::fill(bytes.begin() + wire::kFrameHeaderSize, bytes.end(), uint8_t{0x77});
  sendRaw(m.more_to_rank0[0].get(), bytes);
  m.more_to_rank0[0].reset();  // stream 1 closes behind its frame
  ASSERT_TRUE(notified->wait(Deadline::after(std::chrono::seconds(5))).isOk()) << notified->status().toString();
  EXPECT_EQ(notified->imm(), 0x5eedu);
  EXPECT_EQ(std::count(in.bytes.begin(), in.bytes.begin() + 64, uint8_t{0x77}), 64);
  // Every stream has ended now: the pair fails, and says the peer closed it.
  auto after = m.mesh[0].pair(2).recvImm();
  Status st = after->wait(Deadline::after(std::chrono::seconds(5)));
  EXPECT_EQ(st.code(), StatusCode::kConnectionError) << st.toString();
  EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.toString();
  EXPECT_NE(st.message().find("closed the connection"), std::string::npos) << st.toString();
}

TEST(Handshake, WrongVersionIsRefusedWithBothVersionsNamed) {
  DeviceOptions options;
  options.secret = kSecret;
  auto device = createDevice(options);
  ASSERT_TRUE(device.isOk());
  auto context = (*device)->createContext(0, 2, "version");
  ASSERT_TRUE(context.isOk());
  auto host_port = splitHostPort((*device)->listenAddress());
  ASSERT_TRUE(host_port) << host_port.status().toString();
  auto fd = connectWithRetry(host_port->first, host_port->second, Deadline::after(std::chrono::seconds(5)));
  ASSERT_TRUE(fd.isOk());
  wire::ClientHello hello;
  hello.version = 99;
  hello.context_id = wire::contextId("version");
  hello.src_rank = 1;
  hello.num_streams = 1;
  Status st =
      tcp::clientHandshake(fd->get(), kSecret, hello, Deadline::after(std::chrono::seconds(5)), "rank 0").status();
  EXPECT_EQ(st.code(), StatusCode::kAuthError);
  EXPECT_NE(st.message().find("version " + std::to_string(wire::kProtocolVersion)), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("speaks 99"), std::string::npos) << st.message();
}

TEST(Handshake, ASilentConnectionDoesNotHoldUpOthers) {
  DeviceOptions options;
  options.secret = kSecret;
  options.handshake_timeout = std::chrono::seconds(10);
  auto device = createDevice(options);
  ASSERT_TRUE(device.isOk());
  auto host_port = splitHostPort((*device)->listenAddress());
  // Connects and never says a word.
  auto silent = connectWithRetry(host_port->first, host_port->second, Deadline::after(std::chrono::seconds(5)));
  ASSERT_TRUE(silent.isOk());
  // A real peer that connects right after must not wait out the silent one's handshake timeout.
  auto context = (*device)->createContext(0, 2, "silent");
  ASSERT_TRUE(context.isOk());
  poseidon::testing::TempDir dir;
  Status peer_status;
  std::shared_ptr<Device> peer_device;
  std::shared_ptr<Context> peer_context;
  const auto start = Clock::now();
  std::thread peer([&] {
    auto d = createDevice(options);
    auto store = bootstrap::FileStore::open(dir.path());
    if (!d || !store) {
      peer_status = !d ? d.status() : store.status();
      return;
    }
    peer_device = *d;
    auto c = (*d)->createContext(1, 2, "silent");
    peer_context = *c;
    peer_status = (*c)->connect(**store, Deadline::after(std::chrono::seconds(20)));
  });
  auto store = bootstrap::FileStore::open(dir.path());
  ASSERT_TRUE(store.isOk());
  Status st = (*context)->connect(**store, Deadline::after(std::chrono::seconds(20)));
  peer.join();
  EXPECT_TRUE(st.isOk()) << st.toString();
  EXPECT_TRUE(peer_status.isOk()) << peer_status.toString();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << "the silent connection held up the handshake";
}

TEST(Handshake, GarbageInsteadOfHelloIsDroppedAndTheDeviceGoesOn) {
  DeviceOptions options;
  options.secret = kSecret;
  options.handshake_timeout = std::chrono::milliseconds(500);
  auto m = poseidon::testing::makeMesh(2, options, "garbage");
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  auto host_port = splitHostPort(m->devices[0]->listenAddress());
  ASSERT_TRUE(host_port) << host_port.status().toString();
  auto fd = connectWithRetry(host_port->first, host_port->second, Deadline::after(std::chrono::seconds(5)));
  ASSERT_TRUE(fd.isOk());
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(64, 'x');
  ASSERT_TRUE(sendAll(fd->get(), http.data(), http.size(), Deadline::after(std::chrono::seconds(2)), "d").isOk());
  uint8_t byte;
  EXPECT_EQ(recvAll(fd->get(), &byte, 1, Deadline::after(std::chrono::seconds(5)), "d").code(),
            StatusCode::kConnectionError);
  Buffer in = makeBuffer((*m)[0], 100), out = makeBuffer((*m)[1], 100, 2);
  auto r = (*m)[0].pair(1).recv(0, *in.region, 0, 100);
  auto s = (*m)[1].pair(0).send(0, *out.region, 0, 100);
  EXPECT_TRUE(r->wait(Deadline::after(std::chrono::seconds(5))).isOk());
  EXPECT_TRUE(s->wait(Deadline::after(std::chrono::seconds(5))).isOk());
}

}  // namespace
}  // namespace poseidon::transport
