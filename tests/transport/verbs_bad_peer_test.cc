// A misbehaving peer on the verbs backend: rank 2 sends malformed control messages (through the
// pair's fault-injection hook). Rank 0's pair to it must fail with a reason naming the bad
// field, its pending requests must fail, and ranks 0 and 1 must go on. Runs where an RDMA
// device exists (the Soft-RoCE guest); skips, saying why, elsewhere.
#include <gtest/gtest.h>

#include "tests/support/mesh.h"
#include "tests/support/rdma.h"
#include "transport/verbs/control.h"
#include "transport/verbs/pair.h"
#include "transport/wire/crc32c.h"
#include "transport/wire/little_endian.h"

namespace poseidon::transport::verbs {
namespace {

using poseidon::testing::Buffer;
using poseidon::testing::makeBuffer;

std::vector<uint8_t> encoded(ControlMessage m) {
  std::vector<uint8_t> bytes(kControlSize);
  encodeControl(m, bytes.data());
  return bytes;
}

std::vector<uint8_t> withFixedCrc(std::vector<uint8_t> bytes) {
  wire::storeLe32(&bytes[48], wire::crc32c(bytes.data(), 48));
  return bytes;
}

struct BadControlCase {
  std::string name;
  std::function<std::vector<uint8_t>()> make;
  std::string expected;
};

void PrintTo(const BadControlCase& c, std::ostream* os) { *os << c.name; }

std::vector<BadControlCase> badControls() {
  return {
      {"BadMagic",
       [] {
         auto b = encoded({});
         wire::storeLe32(&b[0], 0x01020304);
         return withFixedCrc(b);
       },
       "magic 0x01020304"},
      {"BadCrc",
       [] {
         auto b = encoded({});
         b[20] ^= 0x40;
         return b;
       },
       "CRC"},
      {"ShortMessage", [] { return std::vector<uint8_t>(17, 0); }, "control message of 17 bytes"},
      {"UnknownType",
       [] {
         auto b = encoded({});
         b[4] = 99;
         return withFixedCrc(b);
       },
       "type 99"},
      {"DoneWithoutPostedReceive",
       [] {
         ControlMessage m;
         m.type = ControlType::kDone;
         m.tag = 77;
         m.total = 8;
         return encoded(m);
       },
       "never posted"},
      {"StagedWriteNoticeForNoStagedRegion",
       [] {
         ControlMessage m;
         m.type = ControlType::kStagedWrite;
         m.rkey = 0x1234;
         m.address = 0x10000;
         m.total = 64;
         return encoded(m);
       },
       "rkey 0x1234, which is no staged region"},
      {"TooManyRingCredits",
       [] {
         ControlMessage m;
         m.ring_credits = 100000;
         return encoded(m);
       },
       "ring credits"},
  };
}

class VerbsBadPeer : public ::testing::TestWithParam<BadControlCase> {};

TEST_P(VerbsBadPeer, ClosesOnlyThatConnectionWithAReason) {
  if (poseidon::testing::rdmaTestAddress().empty()) GTEST_SKIP() << poseidon::testing::kNoRdmaDevice;
  DeviceOptions options;
  options.backend = "verbs";
  options.address = poseidon::testing::rdmaTestAddress();
  options.secret = "verbs-bad-peer";
  auto mesh = poseidon::testing::makeMesh(3, options, "verbs-bad-peer");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  auto& m = *mesh;
  Buffer in = makeBuffer(m[0], 4096);
  auto pending = m[0].pair(2).recv(5, *in.region, 0, 64);
  auto& liar = dynamic_cast<VerbsPair&>(m[2].pair(0));
  ASSERT_TRUE(liar.injectRawControl(GetParam().make()).isOk());
  Status st = pending->wait(Deadline::after(std::chrono::seconds(10)));
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find(GetParam().expected), std::string::npos) << st.toString();
  EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.toString();
  // The liar learns its connection is gone too (rank 0 disconnected it).
  Buffer probe = makeBuffer(m[2], 64);
  auto after = m[2].pair(0).recv(1, *probe.region, 0, 64);
  EXPECT_EQ(after->wait(Deadline::after(std::chrono::seconds(10))).code(), StatusCode::kConnectionError);
  // Ranks 0 and 1 go on.
  Buffer out = makeBuffer(m[1], 1000, 3);
  auto r = m[0].pair(1).recv(0, *in.region, 0, 1000);
  auto s = m[1].pair(0).send(0, *out.region, 0, 1000);
  ASSERT_TRUE(r->wait(Deadline::after(std::chrono::seconds(10))).isOk()) << r->status().toString();
  // `out` must outlive its send.
  ASSERT_TRUE(s->wait(Deadline::after(std::chrono::seconds(10))).isOk()) << s->status().toString();
  EXPECT_EQ(poseidon::testing::firstMismatch(in.bytes.data(), 1000, 3), -1);
}

INSTANTIATE_TEST_SUITE_P(Controls, VerbsBadPeer, ::testing::ValuesIn(badControls()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace poseidon::transport::verbs
