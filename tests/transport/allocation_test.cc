// The hot path allocates nothing: a replaced global operator new counts every allocation of the
// process (all threads, the engine's included) while two ranks exchange 10,000 operations in
// steady state, after a warm-up that lets pools and rings reach the depth the exchange needs.
// Run with waiters driving the wire and with the engine thread alone, on one and on four
// streams.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "tests/support/mesh.h"
#include "tests/support/named_peer.h"
#include "transport/common/rendezvous.h"
#include "transport/device.h"

namespace {
std::atomic<uint64_t> g_allocations{0};

void* countedAllocation(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t size) { return countedAllocation(size); }
void* operator new[](size_t size) { return countedAllocation(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace poseidon::transport {
namespace {

using poseidon::testing::Buffer;
using poseidon::testing::makeBuffer;
using poseidon::testing::makeMesh;
using poseidon::testing::Mesh;

constexpr int kWarmUp = 2000;
constexpr int kMeasured = 10000;
constexpr size_t kMessage = 64;
const auto kTimeout = std::chrono::seconds(30);

struct Mode {
  bool waiters_drive;
  int streams;
};

std::string modeName(const ::testing::TestParamInfo<Mode>& info) {
  return std::string(info.param.waiters_drive ? "waiters_drive" : "engine_only") + "_" +
         std::to_string(info.param.streams) + "streams";
}

class Allocations : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    DeviceOptions o;
    o.secret = "allocation-test";
    o.waiters_drive = GetParam().waiters_drive;
    o.streams = GetParam().streams;
    auto m = makeMesh(2, o, "allocations");
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    mesh_ = std::move(*m);
    a_ = makeBuffer(mesh_[0], 2 * kMessage);
    b_ = makeBuffer(mesh_[1], 2 * kMessage);
  }

  // Runs `iterations` of `round` and returns how many allocations the process made meanwhile.
  template <typename Round>
  uint64_t allocationsOver(int iterations, Round&& round) {
    for (int i = 0; i < kWarmUp; ++i) round();
    const uint64_t before = g_allocations.load();
    for (int i = 0; i < iterations; ++i) round();
    return g_allocations.load() - before;
  }

  Mesh mesh_;
  Buffer a_, b_;
};

TEST_P(Allocations, SendRecvPingPongAllocatesNothingInSteadyState) {
  Pair& to_b = mesh_[0].pair(1);
  Pair& to_a = mesh_[1].pair(0);
  bool ok = true;
  auto round = [&] {
    auto pong = to_b.recv(3, *a_.region, kMessage, kMessage);
    auto ping_in = to_a.recv(3, *b_.region, 0, kMessage);
    auto ping = to_b.send(3, *a_.region, 0, kMessage);
    ok &= ping_in->wait(Deadline::after(kTimeout)).isOk();
    auto pong_out = to_a.send(3, *b_.region, 0, kMessage);
    ok &= pong->wait(Deadline::after(kTimeout)).isOk();
    ok &= ping->wait(Deadline::after(kTimeout)).isOk();
    ok &= pong_out->wait(Deadline::after(kTimeout)).isOk();
  };
  const uint64_t allocations = allocationsOver(kMeasured, round);
  EXPECT_TRUE(ok);
  EXPECT_EQ(allocations, 0u) << "over " << kMeasured << " ping-pongs (" << 4 * kMeasured << " operations)";
}

TEST_P(Allocations, WritePingPongAllocatesNothingInSteadyState) {
  Pair& to_b = mesh_[0].pair(1);
  Pair& to_a = mesh_[1].pair(0);
  const RemoteDescriptor at_a = a_.region->remote();
  const RemoteDescriptor at_b = b_.region->remote();
  bool ok = true;
  uint32_t n = 0;
  auto round = [&] {
    auto ping_seen = to_a.recvImm();
    auto pong_seen = to_b.recvImm();
    auto ping = to_b.write(*a_.region, 0, at_b, kMessage, kMessage, n);
    ok &= ping_seen->wait(Deadline::after(kTimeout)).isOk() && ping_seen->imm() == n;
    auto pong = to_a.write(*b_.region, 0, at_a, kMessage, kMessage, n + 1);
    ok &= pong_seen->wait(Deadline::after(kTimeout)).isOk() && pong_seen->imm() == n + 1;
    ok &= ping->wait(Deadline::after(kTimeout)).isOk() && pong->wait(Deadline::after(kTimeout)).isOk();
    n += 2;
  };
  const uint64_t allocations = allocationsOver(kMeasured, round);
  EXPECT_TRUE(ok);
  EXPECT_EQ(allocations, 0u) << "over " << kMeasured << " write ping-pongs (" << 4 * kMeasured << " operations)";
}

// Whether a send or the receiver's room for it comes first is a race, which the ping-pongs above
// run both ways at random; here each order is forced on one tag. Once the tag has carried a
// message, the other order takes no memory either: the first room to arrive early must not be
// what makes a steady job allocate.
TEST(RendezvousAllocations, ATagInUseAllocatesNothingWhicheverOfSendAndRoomComesFirst) {
  struct Op {
    RequestPtr request;
    uint64_t bytes = 0;
  };
  struct Posted {
    RequestPtr request;
  };
  using TagRendezvous = Rendezvous<uint64_t, Posted, Op>;
  const poseidon::testing::NamedPeer peer;
  TagRendezvous rendezvous(peer, RoomNames{"credit", "credits"});
  const Slice slice{nullptr, 0, kMessage};
  auto newSend = [&] {
    return TagRendezvous::Send::of(std::make_shared<Request>("send"), std::span<const Slice>(&slice, 1));
  };
  int started = 0;
  auto start = [&](uint64_t, TagRendezvous::Send, uint64_t) { ++started; };

  rendezvous.send(3, newSend(), start);  // the send first: it waits for its room
  ASSERT_TRUE(rendezvous.onRoom(3, 0, kMessage, start).isOk());
  TagRendezvous::Send second = newSend();  // made before counting, like the first
  const uint64_t before = g_allocations.load();
  ASSERT_TRUE(rendezvous.onRoom(3, 1, kMessage, start).isOk());  // the room first: it waits
  rendezvous.send(3, std::move(second), start);
  const uint64_t allocations = g_allocations.load() - before;
  EXPECT_EQ(started, 2);
  EXPECT_EQ(allocations, 0u);
}

// The counter works: a test that cannot fail proves nothing.
TEST(AllocationCounter, CountsAnAllocation) {
  const uint64_t before = g_allocations.load();
  auto* leak_free = new int(7);
  EXPECT_EQ(*leak_free, 7);
  delete leak_free;
  EXPECT_GE(g_allocations.load() - before, 1u);
}

INSTANTIATE_TEST_SUITE_P(Modes, Allocations, ::testing::Values(Mode{true, 1}, Mode{false, 1}, Mode{true, 4}), modeName);

}  // namespace
}  // namespace poseidon::transport
