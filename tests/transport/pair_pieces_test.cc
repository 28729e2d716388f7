// The backend-independent pieces both Pairs are built from (rendezvous.h, imm_queue.h,
// pair_argument_checks.h), with small limits so the misbehaving-peer paths run in microseconds.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/named_peer.h"
#include "transport/common/imm_queue.h"
#include "transport/common/pair_argument_checks.h"
#include "transport/common/rendezvous.h"

namespace poseidon::transport {
namespace {

using poseidon::testing::NamedPeer;

// Only its size matters here: nothing is read or written through it.
class PlainRegion final : public MemoryRegion {
 public:
  explicit PlainRegion(size_t size) : MemoryRegion(nullptr, size) {}
  RemoteDescriptor remote() const override { return {}; }
};

struct Op {
  RequestPtr request;
  uint64_t bytes = 0;
};
struct Posted {
  RequestPtr request;
  uint64_t room = 0;
};
using TestRendezvous = Rendezvous<uint64_t, Posted, Op>;

RequestPtr newRequest(const std::string& what) { return std::make_shared<Request>(what); }

// A started send: which message, and the room it got.
struct Started {
  uint64_t seq;
  uint64_t bytes;
  uint64_t room;
};

TEST(Rendezvous, SendWaitsForItsRoomAndEarlyRoomWaitsForItsSend) {
  NamedPeer peer;
  TestRendezvous r(peer, RoomNames{"credit", "credits"}, 4);
  std::vector<Started> started;
  auto start = [&](uint64_t seq, TestRendezvous::Send send, uint64_t room) {
    started.push_back({seq, send.op->bytes, room});
  };
  PlainRegion region(64);
  const Slice slice{&region, 0, 10};
  // Send first: it waits, then the room starts it.
  r.send(7, TestRendezvous::Send::of(newRequest("send a"), std::span<const Slice>(&slice, 1)), start);
  EXPECT_TRUE(started.empty());
  ASSERT_TRUE(r.onRoom(7, 0, 100, start).isOk());
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].seq, 0u);
  EXPECT_EQ(started[0].bytes, 10u);
  EXPECT_EQ(started[0].room, 100u);
  // Room first: it waits, then the next send on the tag takes it at once.
  ASSERT_TRUE(r.onRoom(7, 1, 200, start).isOk());
  EXPECT_EQ(started.size(), 1u);
  r.send(7, TestRendezvous::Send::of(newRequest("send b"), std::span<const Slice>(&slice, 1)), start);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[1].seq, 1u);
  EXPECT_EQ(started[1].room, 200u);
  // Tags count separately.
  r.send(8, TestRendezvous::Send::of(newRequest("send c"), {}), start);
  ASSERT_TRUE(r.onRoom(8, 0, 0, start).isOk());
  ASSERT_EQ(started.size(), 3u);
  EXPECT_EQ(started[2].seq, 0u);
}

TEST(Rendezvous, RoomOutOfOrderIsThePeersProtocolError) {
  NamedPeer peer;
  TestRendezvous r(peer, RoomNames{"clear-to-send", "receives"}, 4);
  auto start = [](uint64_t, TestRendezvous::Send, uint64_t) {};
  Status st = r.onRoom(3, 1, 8, start);
  EXPECT_EQ(st.code(), StatusCode::kProtocolError);
  EXPECT_EQ(st.message(), "rank 1 (peer:1) sent clear-to-send 1 on tag 3, expected 0");
}

TEST(Rendezvous, TooManyUnusedRoomsIsThePeersProtocolError) {
  NamedPeer peer;
  TestRendezvous r(peer, RoomNames{"credit", "credits"}, 2);
  auto start = [](uint64_t, TestRendezvous::Send, uint64_t) {};
  ASSERT_TRUE(r.onRoom(1, 0, 8, start).isOk());
  ASSERT_TRUE(r.onRoom(1, 1, 8, start).isOk());
  Status st = r.onRoom(1, 2, 8, start);
  EXPECT_EQ(st.code(), StatusCode::kProtocolError);
  EXPECT_EQ(st.message(), "rank 1 (peer:1) granted more than 2 unused credits");
}

TEST(Rendezvous, PostedReceivesAreNumberedPerTagAndFound) {
  NamedPeer peer;
  TestRendezvous r(peer, RoomNames{"credit", "credits"});
  EXPECT_EQ(r.post(5, Posted{newRequest("recv a"), 16}), 0u);
  EXPECT_EQ(r.post(5, Posted{newRequest("recv b"), 32}), 1u);
  EXPECT_EQ(r.post(6, Posted{newRequest("recv c"), 64}), 0u);
  ASSERT_NE(r.findPosted(5, 1), nullptr);
  EXPECT_EQ(r.findPosted(5, 1)->room, 32u);
  EXPECT_EQ(r.findPosted(5, 2), nullptr);
  auto taken = r.takePosted(5, 0);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->room, 16u);
  EXPECT_FALSE(r.takePosted(5, 0).has_value());
}

TEST(Rendezvous, FailAllFailsWaitingSendsAndPostedReceivesWithTheCause) {
  NamedPeer peer;
  TestRendezvous r(peer, RoomNames{"credit", "credits"});
  auto start = [](uint64_t, TestRendezvous::Send, uint64_t) {};
  auto send = newRequest("send tag 1 to rank 1");
  auto recv = newRequest("recv tag 2 from rank 1");
  r.send(1, TestRendezvous::Send::of(send, {}), start);
  r.post(2, Posted{recv, 8});
  Completions done;
  r.failAll(Status(StatusCode::kConnectionError, "rank 1 closed the connection"), done);
  completeAll(done);
  ASSERT_TRUE(send->test());
  ASSERT_TRUE(recv->test());
  EXPECT_EQ(send->status().message(), "send tag 1 to rank 1: rank 1 closed the connection");
  EXPECT_EQ(recv->status().code(), StatusCode::kConnectionError);
  EXPECT_EQ(r.findPosted(2, 0), nullptr);
}

TEST(ImmQueue, MatchesImmediatesAndWaitersInOrder) {
  NamedPeer peer;
  ImmQueue q(peer, 4);
  Completions done;
  // A write's checked payload CRC travels with its immediate, whether claimed later or awaited.
  ASSERT_TRUE(q.deliver(11, 0xC0FFEEu, done).isOk());
  ASSERT_TRUE(q.deliver(12, std::nullopt, done).isOk());
  EXPECT_TRUE(done.empty());
  auto first = newRequest("first");
  ASSERT_TRUE(q.claim(first, done));
  auto second = newRequest("second");
  ASSERT_TRUE(q.claim(second, done));
  auto third = newRequest("third");
  EXPECT_FALSE(q.claim(third, done));
  q.await(third);
  ASSERT_TRUE(q.deliver(13, 0xBEEFu, done).isOk());
  completeAll(done);
  EXPECT_EQ(first->imm(), 11u);
  EXPECT_EQ(first->payloadCrc(), 0xC0FFEEu);
  EXPECT_EQ(second->imm(), 12u);
  EXPECT_EQ(second->payloadCrc(), std::nullopt);
  EXPECT_EQ(third->imm(), 13u);
  EXPECT_EQ(third->payloadCrc(), 0xBEEFu);
}

TEST(ImmQueue, TooManyUnclaimedIsTheWritersProtocolError) {
  NamedPeer peer;
  ImmQueue q(peer, 2);
  Completions done;
  for (uint32_t imm : {1u, 2u}) ASSERT_TRUE(q.deliver(imm, std::nullopt, done).isOk());
  Status st = q.deliver(3, std::nullopt, done);
  EXPECT_EQ(st.code(), StatusCode::kProtocolError);
  EXPECT_EQ(st.message(), "rank 1 (peer:1) made more than 2 writes nobody waited for");
}

TEST(ImmQueue, FailureFailsWaitersButKeepsLandedImmediates) {
  NamedPeer peer;
  ImmQueue q(peer);
  Completions done;
  auto waiter = newRequest("write notification from rank 1");
  q.await(waiter);
  q.failWaiters(Status(StatusCode::kConnectionError, "gone"), done);
  completeAll(done);
  EXPECT_EQ(waiter->status().message(), "write notification from rank 1: gone");
  ASSERT_TRUE(q.deliver(5, std::nullopt, done).isOk());
  EXPECT_TRUE(q.claim(newRequest("late"), done));
}

TEST(PairArgumentChecks, NamesTheRangeAndTheRegion) {
  const PairArgumentChecks tcp(BackendTag::kTcp);
  PlainRegion region(100);
  const Request send("send tag 1 to rank 1");
  const Slice inside{&region, 90, 10};
  const Slice outside{&region, 90, 11};
  EXPECT_TRUE(tcp.send(send, std::span<const Slice>(&inside, 1)).isOk());
  EXPECT_EQ(tcp.send(send, std::span<const Slice>(&outside, 1)).message(),
            "send tag 1 to rank 1: slice [90, +11) is outside its region of 100 bytes");
  const Slice no_region{nullptr, 0, 1};
  EXPECT_EQ(tcp.send(send, std::span<const Slice>(&no_region, 1)).code(), StatusCode::kInvalidArgument);
  const Request recv("recv tag 1 from rank 1");
  EXPECT_EQ(tcp.recv(recv, region, 101, 0).message(),
            "recv tag 1 from rank 1: range [101, +0) is outside its region of 100 bytes");
}

TEST(PairArgumentChecks, WriteChecksLocalRangeBackendAndRemoteRange) {
  const PairArgumentChecks tcp(BackendTag::kTcp);
  PlainRegion local(100);
  const Request write("write of 10 bytes to region 3 of rank 1");
  RemoteDescriptor remote;
  remote.backend = BackendTag::kTcp;
  remote.key = 3;
  remote.length = 50;
  EXPECT_TRUE(tcp.write(write, local, 0, remote, 40, 10).isOk());
  EXPECT_EQ(tcp.write(write, local, 95, remote, 0, 10).message(),
            "write of 10 bytes to region 3 of rank 1: local range [95, +10) is outside the local region of 100 bytes");
  EXPECT_EQ(tcp.write(write, local, 0, remote, 41, 10).message(),
            "write of 10 bytes to region 3 of rank 1: remote range [41, +10) is outside the remote region of 50 bytes");
  remote.backend = BackendTag::kVerbs;
  EXPECT_EQ(tcp.write(write, local, 0, remote, 0, 10).message(),
            "write of 10 bytes to region 3 of rank 1: remote descriptor is for backend 'verbs', not 'tcp'");
}

TEST(PairArgumentChecks, ABackendThatOwnsItsRegionsRefusesOthersAndSaysSo) {
  const PairArgumentChecks verbs(BackendTag::kVerbs, [](const MemoryRegion&) { return false; });
  PlainRegion region(100);
  const Request recv("recv tag 1 from rank 1");
  EXPECT_EQ(verbs.recv(recv, region, 0, 10).message(),
            "recv tag 1 from rank 1: range [0, +10) is outside its region of 100 bytes or not a verbs region");
}

}  // namespace
}  // namespace poseidon::transport
