// Sealed frames (DeviceOptions::encrypt_frames) on the TCP backend: the frame cipher alone, then
// real ranks against a peer played by the test, which knows the secret (so it can seal) and
// sends what an attacker on the path could make of the frames: altered, dropped, replayed,
// unsealed or sealed under another connection's key. Each must fail the pair with a reason,
// never be acted on, and leave the other ranks' pair working; the payload on the wire must not
// be the plaintext.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "tests/support/mesh.h"
#include "tests/transport/bad_peer_mesh.h"
#include "transport/bootstrap/file_store.h"
#include "transport/common/socket.h"
#include "transport/wire/crc32c.h"
#include "transport/wire/frame.h"
#include "transport/wire/frame_cipher.h"
#include "transport/wire/little_endian.h"

namespace poseidon::transport {
namespace {

using badpeer::BadPeerMesh;
using badpeer::makeBadPeerMesh;
using badpeer::sendRaw;
using poseidon::testing::Buffer;
using poseidon::testing::makeBuffer;
using wire::FrameCipher;

constexpr auto kWait = std::chrono::seconds(10);

std::unique_ptr<FrameCipher> cipher(const wire::FrameKey& key, FrameCipher::Direction direction) {
  auto c = FrameCipher::create(key, direction);
  if (!c) throw StatusError(c.status());
  return std::move(*c);
}

wire::FrameKey keyOf(uint8_t fill) {
  wire::FrameKey key;
  key.fill(fill);
  return key;
}

// Header, then the payload sealed by `sealer`, then the tag: a frame as a sealing side sends it.
std::vector<uint8_t> sealedFrame(FrameCipher& sealer, wire::FrameHeader h, const std::vector<uint8_t>& payload) {
  h.flags |= wire::kFlagSealed;
  h.length = static_cast<uint32_t>(payload.size());
  std::vector<uint8_t> bytes(wire::kFrameHeaderSize + payload.size() + wire::kFrameTagSize);
  wire::encodeHeader(h, bytes.data());
  const iovec piece{const_cast<uint8_t*>(payload.data()), payload.size()};
  const Status st = sealer.seal(bytes.data(), std::span<const iovec>(&piece, 1), bytes.data() + wire::kFrameHeaderSize,
                                bytes.data() + wire::kFrameHeaderSize + payload.size());
  if (!st.isOk()) throw StatusError(st);
  return bytes;
}

TEST(FrameCipher, OpensWhatItSealedAcrossPiecesAndTheCiphertextIsNotThePlaintext) {
  auto sealer = cipher(keyOf(1), FrameCipher::Direction::kSeal);
  auto opener = cipher(keyOf(1), FrameCipher::Direction::kOpen);
  std::vector<uint8_t> plain(10000);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<uint8_t>(i * 7);
  wire::EncodedHeader header{};
  header.fill(0x5A);
  // Two pieces, as a frame over two slices of the sender's memory.
  const iovec pieces[2] = {{plain.data(), 3000}, {plain.data() + 3000, 7000}};
  for (int frame = 0; frame < 3; ++frame) {
    std::vector<uint8_t> sealed(plain.size());
    uint8_t tag[wire::kFrameTagSize];
    ASSERT_TRUE(sealer->seal(header.data(), pieces, sealed.data(), tag).isOk());
    size_t same = 0;
    for (size_t i = 0; i < plain.size(); ++i) same += sealed[i] == plain[i];
    EXPECT_LT(same, plain.size() / 64) << "frame " << frame << ": the ciphertext looks like the plaintext";
    ASSERT_TRUE(opener->open(header.data(), sealed.data(), sealed.data(), sealed.size(), tag, "peer").isOk())
        << "frame " << frame;
    EXPECT_EQ(sealed, plain) << "frame " << frame;
  }
  EXPECT_EQ(sealer->framesDone(), 3u);
  EXPECT_EQ(opener->framesDone(), 3u);
}

// One byte changed anywhere (header, payload or tag) fails the frame, naming the peer.
TEST(FrameCipher, AnyAlteredByteFailsAuthentication) {
  const std::vector<uint8_t> plain(64, 0x42);
  for (size_t at = 0; at < wire::kFrameHeaderSize + plain.size() + wire::kFrameTagSize; at += 5) {
    auto sealer = cipher(keyOf(2), FrameCipher::Direction::kSeal);
    auto opener = cipher(keyOf(2), FrameCipher::Direction::kOpen);
    wire::FrameHeader h;
    h.type = wire::FrameType::kData;
    h.total = plain.size();
    std::vector<uint8_t> bytes = sealedFrame(*sealer, h, plain);
    bytes[at] ^= 0x01;
    const Status st =
        opener->open(bytes.data(), bytes.data() + wire::kFrameHeaderSize, bytes.data() + wire::kFrameHeaderSize,
                     plain.size(), bytes.data() + wire::kFrameHeaderSize + plain.size(), "rank 9");
    EXPECT_EQ(st.code(), StatusCode::kProtocolError) << "byte " << at;
    EXPECT_NE(st.message().find("sealed frame 0 (64 payload bytes) from rank 9 failed authentication"),
              std::string::npos)
        << st.message();
  }
}

TEST(FrameCipher, FramesOpenOnlyInTheOrderTheyWereSealedAndOnlyUnderTheirKey) {
  const std::vector<uint8_t> plain(100, 0x11);
  wire::FrameHeader h;
  auto sealer = cipher(keyOf(3), FrameCipher::Direction::kSeal);
  const std::vector<uint8_t> first = sealedFrame(*sealer, h, plain);
  const std::vector<uint8_t> second = sealedFrame(*sealer, h, plain);
  EXPECT_NE(first, second) << "two frames of the same bytes must not seal alike";
  auto open = [&](FrameCipher& opener, std::vector<uint8_t> bytes) {
    return opener.open(bytes.data(), bytes.data() + wire::kFrameHeaderSize, bytes.data() + wire::kFrameHeaderSize,
                       plain.size(), bytes.data() + wire::kFrameHeaderSize + plain.size(), "peer");
  };
  auto in_order = cipher(keyOf(3), FrameCipher::Direction::kOpen);
  EXPECT_FALSE(open(*in_order, second).isOk()) << "frame 1 opened as frame 0 (frame 0 dropped)";
  auto replayed = cipher(keyOf(3), FrameCipher::Direction::kOpen);
  EXPECT_TRUE(open(*replayed, first).isOk());
  EXPECT_FALSE(open(*replayed, first).isOk()) << "frame 0 opened twice";
  auto other_key = cipher(keyOf(4), FrameCipher::Direction::kOpen);
  EXPECT_FALSE(open(*other_key, first).isOk());
}

DeviceOptions sealedOptions() {
  DeviceOptions options;
  options.encrypt_frames = true;
  return options;
}

// Rank 2 seals for rank 0 with the key its connection to rank 0 derived; it opens rank 0's
// frames with the other direction's key.
struct SealedBadPeer {
  BadPeerMesh m = makeBadPeerMesh(sealedOptions(), wire::kFeatureSealedFrames);
  std::unique_ptr<FrameCipher> to_rank0 = cipher(m.keys0.client_to_server, FrameCipher::Direction::kSeal);
  std::unique_ptr<FrameCipher> from_rank0 = cipher(m.keys0.server_to_client, FrameCipher::Direction::kOpen);

  // Reads one sealed frame from rank 0 and opens it: its header and plaintext payload.
  std::pair<wire::FrameHeader, std::vector<uint8_t>> receiveFromRank0(std::vector<uint8_t>* wire_payload = nullptr) {
    wire::EncodedHeader bytes;
    Status st = recvAll(m.to_rank0.get(), bytes.data(), bytes.size(), Deadline::after(kWait), "rank 0");
    if (!st.isOk()) throw StatusError(st);
    auto header = wire::decodeHeader(bytes.data(), {}, "rank 0");
    if (!header) throw StatusError(header.status());
    std::vector<uint8_t> rest(header->length + wire::kFrameTagSize);
    st = recvAll(m.to_rank0.get(), rest.data(), rest.size(), Deadline::after(kWait), "rank 0");
    if (!st.isOk()) throw StatusError(st);
    if (wire_payload) wire_payload->assign(rest.begin(), rest.begin() + header->length);
    st = from_rank0->open(bytes.data(), rest.data(), rest.data(), header->length, rest.data() + header->length,
                          "rank 0");
    if (!st.isOk()) throw StatusError(st);
    rest.resize(header->length);
    return {*header, rest};
  }
};

TEST(SealedFrames, AMessageTravelsSealedAndItsBytesAreNotOnTheWire) {
  SealedBadPeer peer;
  constexpr size_t kSize = 4096;
  Buffer out = makeBuffer(peer.m.mesh[0], kSize, 9);
  auto send = peer.m.mesh[0].pair(2).send(7, *out.region, 0, kSize);
  // Rank 2 grants the room (a sealed credit); rank 0's data comes back sealed.
  wire::FrameHeader credit;
  credit.type = wire::FrameType::kCredit;
  credit.tag = 7;
  credit.total = kSize;
  sendRaw(peer.m.to_rank0.get(), sealedFrame(*peer.to_rank0, credit, {}));
  std::vector<uint8_t> on_wire;
  auto [header, plain] = peer.receiveFromRank0(&on_wire);
  EXPECT_EQ(header.type, wire::FrameType::kData);
  EXPECT_TRUE(header.flags & wire::kFlagSealed);
  EXPECT_FALSE(header.flags & wire::kFlagPayloadCrc) << "the tag replaces the CRC";
  ASSERT_EQ(plain.size(), kSize);
  EXPECT_EQ(poseidon::testing::firstMismatch(plain.data(), kSize, 9), -1);
  EXPECT_EQ(std::search(on_wire.begin(), on_wire.end(), out.bytes.begin(), out.bytes.begin() + 32), on_wire.end())
      << "32 bytes of the plaintext appear on the wire";
  EXPECT_TRUE(send->wait(Deadline::after(kWait)).isOk()) << send->status().toString();
}

struct AttackCase {
  std::string name;
  // Given rank 2's sealer to rank 0 (frame 1 is next: rank 2 sealed one credit already) and
  // another connection's keys, the bytes to send.
  std::function<std::vector<uint8_t>(FrameCipher& sealer, const wire::FrameKeys& other)> make;
  std::string expected;
};
void PrintTo(const AttackCase& c, std::ostream* os) { *os << c.name; }

wire::FrameHeader dataFrame() {
  wire::FrameHeader h;
  h.type = wire::FrameType::kData;
  h.tag = 5;
  h.total = 64;
  return h;
}
const std::vector<uint8_t> kPayload(64, 0xC3);

std::vector<AttackCase> attacks() {
  constexpr const char* kFailed = "failed authentication";
  return {
      {"PayloadByteFlipped",
       [](FrameCipher& s, const wire::FrameKeys&) {
         auto b = sealedFrame(s, dataFrame(), kPayload);
         b[wire::kFrameHeaderSize + 10] ^= 0x80;
         return b;
       },
       kFailed},
      {"HeaderFieldChangedWithItsCrcRecomputed",
       [](FrameCipher& s, const wire::FrameKeys&) {
         auto b = sealedFrame(s, dataFrame(), kPayload);
         wire::storeLe32(&b[40], 0x1234);  // the immediate: no other check looks at it on data
         wire::storeLe32(&b[52], wire::crc32c(b.data(), 52));
         return b;
       },
       kFailed},
      {"TagFlipped",
       [](FrameCipher& s, const wire::FrameKeys&) {
         auto b = sealedFrame(s, dataFrame(), kPayload);
         b.back() ^= 0x01;
         return b;
       },
       kFailed},
      {"FrameDropped",
       [](FrameCipher& s, const wire::FrameKeys&) {
         wire::FrameHeader credit;
         credit.type = wire::FrameType::kCredit;
         credit.tag = 8;
         credit.total = 16;
         (void)sealedFrame(s, credit, {});  // sealed, never sent
         return sealedFrame(s, dataFrame(), kPayload);
       },
       kFailed},
      {"FrameReplayed",
       [](FrameCipher& s, const wire::FrameKeys&) {
         wire::FrameHeader credit;
         credit.type = wire::FrameType::kCredit;
         credit.tag = 8;
         credit.total = 16;
         auto b = sealedFrame(s, credit, {});
         b.insert(b.end(), b.begin(), b.end());  // the same credit twice
         return b;
       },
       kFailed},
      {"SealedUnderAnotherConnectionsKey",
       [](FrameCipher&, const wire::FrameKeys& other) {
         auto foreign = cipher(other.client_to_server, FrameCipher::Direction::kSeal);
         (void)sealedFrame(*foreign, {}, {});  // at frame 1, as rank 0's opener is
         return sealedFrame(*foreign, dataFrame(), kPayload);
       },
       kFailed},
      {"Unsealed",
       [](FrameCipher&, const wire::FrameKeys&) {
         wire::FrameHeader h = dataFrame();
         h.length = 64;
         std::vector<uint8_t> b(wire::kFrameHeaderSize + 64, 0xC3);
         wire::encodeHeader(h, b.data());
         return b;
       },
       "an unsealed data frame from rank 2"},
  };
}

class SealedFrameAttack : public ::testing::TestWithParam<AttackCase> {};

TEST_P(SealedFrameAttack, FailsThePairWithAReasonAndIsNotActedOn) {
  SealedBadPeer peer;
  Buffer in = makeBuffer(peer.m.mesh[0], 4096, 1);
  auto pending = peer.m.mesh[0].pair(2).recv(5, *in.region, 0, 64);
  // Rank 0's credit for it comes sealed; rank 2 reads it as a real peer would.
  auto [credit, none] = peer.receiveFromRank0();
  ASSERT_EQ(credit.type, wire::FrameType::kCredit);
  // Frame 0 of rank 2: a genuine credit (for a send rank 0 has not posted), so the attack comes
  // at frame 1 of a connection that already carried sealed traffic.
  wire::FrameHeader grant;
  grant.type = wire::FrameType::kCredit;
  grant.tag = 9;
  grant.total = 16;
  sendRaw(peer.m.to_rank0.get(), sealedFrame(*peer.to_rank0, grant, {}));
  sendRaw(peer.m.to_rank0.get(), GetParam().make(*peer.to_rank0, peer.m.keys1));
  Status st = pending->wait(Deadline::after(kWait));
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find(GetParam().expected), std::string::npos) << st.toString();
  EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.toString();
  // Not acted on: the receive's memory does not hold the attacker's plaintext (0xC3 bytes).
  EXPECT_LT(std::count(in.bytes.begin(), in.bytes.begin() + 64, uint8_t{0xC3}), 8);
  // Ranks 0 and 1 go on, sealed.
  Buffer out = makeBuffer(peer.m.mesh[1], 1000, 3);
  auto r = peer.m.mesh[0].pair(1).recv(0, *in.region, 0, 1000);
  auto s = peer.m.mesh[1].pair(0).send(0, *out.region, 0, 1000);
  ASSERT_TRUE(r->wait(Deadline::after(kWait)).isOk()) << r->status().toString();
  ASSERT_TRUE(s->wait(Deadline::after(kWait)).isOk()) << s->status().toString();
  EXPECT_EQ(poseidon::testing::firstMismatch(in.bytes.data(), 1000, 3), -1);
}

INSTANTIATE_TEST_SUITE_P(OnThePath, SealedFrameAttack, ::testing::ValuesIn(attacks()),
                         [](const auto& param_info) { return param_info.param.name; });

// A side that seals and one that does not are refused at the handshake, naming the option,
// whichever side has it on.
class SealedFramesHandshake : public ::testing::TestWithParam<bool> {};

TEST_P(SealedFramesHandshake, OneSidedEncryptionIsRefusedNamingTheOption) {
  const bool server_seals = GetParam();
  DeviceOptions options;
  options.encrypt_frames = server_seals;
  options.secret = badpeer::kBadPeerSecret;
  auto device = createDevice(options);
  ASSERT_TRUE(device.isOk()) << device.status().toString();
  auto context = (*device)->createContext(0, 3, badpeer::kBadPeerContext);
  ASSERT_TRUE(context.isOk());
  poseidon::testing::TempDir dir;
  std::thread rank0([&] {
    auto store = bootstrap::FileStore::open(dir.path());
    if (store) (void)(*context)->connect(**store, Deadline::after(std::chrono::seconds(1)));
  });
  auto refused =
      badpeer::handshakeAsRank2(dir.path(), 0, server_seals ? uint16_t{0} : uint16_t{wire::kFeatureSealedFrames});
  rank0.join();
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), StatusCode::kAuthError);
  EXPECT_NE(refused.status().message().find("encrypt_frames"), std::string::npos) << refused.status().toString();
}

INSTANTIATE_TEST_SUITE_P(EitherSide, SealedFramesHandshake, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "ServerSeals" : "ClientSeals"; });

}  // namespace
}  // namespace poseidon::transport
