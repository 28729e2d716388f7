// Host staging of device memory, on every backend, on any machine: FakeDeviceMemory stands in
// for a GPU (its device pages are untouchable outside its copies, so a backend that skipped the
// staging copy would crash here), and the exchanges of device_exchange.h run through it. The
// copy counters check that each operation stages exactly the range it moves, and the traffic
// counters that the payload counts once, staged or not. The verbs cases
// run where an RDMA device exists (the Soft-RoCE guest) and skip elsewhere.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/support/device_exchange.h"
#include "tests/support/fake_device_memory.h"
#include "tests/support/rdma.h"
#ifdef POSEIDON_HAVE_VERBS
#include "transport/verbs/control.h"
#include "transport/verbs/pair.h"
#endif

namespace poseidon::transport {
namespace {

using poseidon::testing::DeviceBuffer;
using poseidon::testing::FakeDeviceMemory;
using poseidon::testing::makeBuffer;
using poseidon::testing::makeDeviceBuffer;
using poseidon::testing::Mesh;

constexpr auto kTimeout = std::chrono::seconds(30);

class Staging : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "verbs" && poseidon::testing::rdmaTestAddress().empty()) {
      GTEST_SKIP() << poseidon::testing::kNoRdmaDevice;
    }
    DeviceOptions o;
    o.backend = GetParam();
    o.secret = "staging-secret";
    o.stripe_bytes = 256 * 1024;
    o.device_memory = fake_;
    if (o.backend == "verbs") o.address = poseidon::testing::rdmaTestAddress();
    auto m = poseidon::testing::makeMesh(2, o, "staging");
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    mesh_ = std::move(*m);
  }

  std::shared_ptr<FakeDeviceMemory> fake_ = std::make_shared<FakeDeviceMemory>();
  Mesh mesh_;
};

// The traffic counters of rank 0 -> rank 1 after `messages` of `bytes` in all: the payload
// once on each side, never the staging copies as well.
void expectTraffic(Mesh& m, uint64_t bytes, uint64_t messages) {
  EXPECT_EQ(m[0].pair(1).traffic(), (PairTraffic{bytes, 0, messages, 0}));
  EXPECT_EQ(m[1].pair(0).traffic(), (PairTraffic{0, bytes, 0, messages}));
}

TEST_P(Staging, DeviceMemoryIsRegisteredThroughAHostCopy) {
  DeviceBuffer device = makeDeviceBuffer(mesh_[0], *fake_, 10000, 1);
  EXPECT_TRUE(device.region->staged());
  EXPECT_EQ(device.region->data(), device.data);
  EXPECT_NE(device.region->wire(), device.data);
  const RemoteDescriptor remote = device.region->remote();
  EXPECT_TRUE(remote.staged);
  if (GetParam() == "verbs") {
    EXPECT_EQ(remote.address, reinterpret_cast<uint64_t>(device.region->wire()));
  }
  auto parsed = RemoteDescriptor::parse(remote.serialize());
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_TRUE(parsed->staged);
  // Host memory next to it is not staged.
  auto host = makeBuffer(mesh_[0], 100);
  EXPECT_FALSE(host.region->staged());
  EXPECT_EQ(host.region->wire(), host.bytes.data());
  EXPECT_FALSE(host.region->remote().staged);
  EXPECT_EQ(fake_->bytesToHost() + fake_->bytesToDevice(), 0u) << "registration copies nothing";
  // TCP has no other way; verbs asked for a dma-buf first.
  EXPECT_EQ(fake_->dmabufExports(), GetParam() == "verbs" ? 1 : 0);
}

// Verbs tries ibv_reg_dmabuf_mr with what the runtime exported; a device or fd it refuses (here
// any RDMA driver: the fd is no dma-buf; Soft-RoCE imports none at all) falls back to staging.
TEST_P(Staging, ARefusedDmabufFallsBackToStaging) {
  fake_->offerDmabuf(true);
  DeviceBuffer device = makeDeviceBuffer(mesh_[0], *fake_, 10000, 1);
  EXPECT_TRUE(device.region->staged());
  EXPECT_EQ(fake_->dmabufExports(), GetParam() == "verbs" ? 1 : 0);
  DeviceBuffer in = makeDeviceBuffer(mesh_[1], *fake_, 10000, 2);
  auto r = mesh_[1].pair(0).recv(3, *in.region, 0, 10000);
  auto s = mesh_[0].pair(1).send(3, *device.region, 0, 10000);
  ASSERT_TRUE(r->wait(Deadline::after(kTimeout)).isOk()) << r->status().toString();
  ASSERT_TRUE(s->wait(Deadline::after(kTimeout)).isOk()) << s->status().toString();
  const auto got = poseidon::testing::readBack(*fake_, in);
  EXPECT_EQ(poseidon::testing::firstMismatch(got.data(), got.size(), 1), -1);
}

TEST_P(Staging, SendAndReceiveBetweenDeviceRegions) {
  poseidon::testing::sendRecvDeviceToDevice(mesh_, *fake_);
  const uint64_t moved = (3u << 20) + 5 - 3;
  EXPECT_EQ(fake_->bytesToHost(), moved) << "the sender stages exactly the message";
  EXPECT_EQ(fake_->bytesToDevice(), moved) << "the receiver copies exactly the message to the device";
  expectTraffic(mesh_, moved, 1);
}

TEST_P(Staging, SendvMixesHostAndDeviceSlices) {
  poseidon::testing::sendvMixedHostAndDeviceSlices(mesh_, *fake_);
  EXPECT_EQ(fake_->bytesToHost(), 70000u) << "only the device slice is staged";
  EXPECT_EQ(fake_->bytesToDevice(), 91000u);
  expectTraffic(mesh_, 91000, 1);
}

TEST_P(Staging, WritesIntoDeviceMemoryAreOnTheDeviceWhenTheirImmediateArrives) {
  poseidon::testing::writesIntoDeviceMemoryInOrder(mesh_, *fake_);
  EXPECT_EQ(fake_->bytesToHost(), 0u);
  EXPECT_EQ(fake_->bytesToDevice(), (3u << 20) + 5);
  expectTraffic(mesh_, (3u << 20) + 5, 4);
}

TEST_P(Staging, WriteFromDeviceMemory) {
  poseidon::testing::writeFromDeviceMemory(mesh_, *fake_);
  EXPECT_EQ(fake_->bytesToHost(), (3u << 20) + 5 - 20);
  EXPECT_EQ(fake_->bytesToDevice(), 0u);
  expectTraffic(mesh_, (3u << 20) + 5 - 20, 1);
}

TEST_P(Staging, AFailedCopyOutFailsThatSendNamingTheMemoryAndThePairGoesOn) {
  DeviceBuffer out = makeDeviceBuffer(mesh_[0], *fake_, 5000, 2);
  DeviceBuffer in = makeDeviceBuffer(mesh_[1], *fake_, 5000, 3);
  auto r = mesh_[1].pair(0).recv(1, *in.region, 0, 5000);
  fake_->failCopies("injected device fault");
  auto failed = mesh_[0].pair(1).send(1, *out.region, 100, 4000);
  Status st = failed->wait(Deadline::after(kTimeout));
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("send tag 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("4000 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(fmt::format("{}", fmt::ptr(out.data + 100))), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("injected device fault"), std::string::npos) << st.message();
  EXPECT_FALSE(r->test()) << "a send that never left must not complete the receive";
  fake_->failCopies(std::nullopt);
  auto s = mesh_[0].pair(1).send(1, *out.region, 0, 5000);
  ASSERT_TRUE(s->wait(Deadline::after(kTimeout)).isOk()) << s->status().toString();
  ASSERT_TRUE(r->wait(Deadline::after(kTimeout)).isOk()) << r->status().toString();
  const auto got = poseidon::testing::readBack(*fake_, in);
  EXPECT_EQ(poseidon::testing::firstMismatch(got.data(), got.size(), 2), -1);
}

TEST_P(Staging, AFailedCopyInFailsTheReceiveNamingTheCause) {
  DeviceBuffer in = makeDeviceBuffer(mesh_[1], *fake_, 5000, 3);
  auto out = makeBuffer(mesh_[0], 5000, 4);
  auto r = mesh_[1].pair(0).recv(1, *in.region, 0, 5000);
  fake_->failCopies("injected device fault");
  auto s = mesh_[0].pair(1).send(1, *out.region, 0, 5000);
  Status st = r->wait(Deadline::after(kTimeout));
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("injected device fault"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("recv tag 1"), std::string::npos) << st.message();
  // The message cannot reach the device whole: the pair is down and says why.
  EXPECT_FALSE(mesh_[1].pair(0).status().isOk());
  fake_->failCopies(std::nullopt);
  // `out` must outlive its send, whichever way the send ends (ASan saw the engine's sendmsg still
  // reading it after the receiver had failed and this test had returned).
  (void)s->wait(Deadline::after(kTimeout));
}

#ifdef POSEIDON_HAVE_VERBS
// A staged-write notice is peer input: one naming memory outside the staged region it names
// must fail that pair, never copy.
TEST_P(Staging, VerbsNoticeOutsideTheStagedRegionFailsThePair) {
  if (GetParam() != "verbs") GTEST_SKIP() << "verbs only: TCP frames carry their own bounds";
  DeviceBuffer target = makeDeviceBuffer(mesh_[1], *fake_, 8192, 5);
  auto pending = mesh_[1].pair(0).recvImm();
  verbs::ControlMessage notice;
  notice.type = verbs::ControlType::kStagedWrite;
  notice.rkey = target.region->remote().key;
  notice.address = target.region->remote().address + 4096;
  notice.total = 8192;
  std::vector<uint8_t> bytes(verbs::kControlSize);
  verbs::encodeControl(notice, bytes.data());
  auto& liar = dynamic_cast<verbs::VerbsPair&>(mesh_[0].pair(1));
  ASSERT_TRUE(liar.injectRawControl(bytes).isOk());
  Status st = pending->wait(Deadline::after(kTimeout));
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("outside that region"), std::string::npos) << st.message();
  EXPECT_EQ(fake_->bytesToDevice(), 0u);
}
#endif

INSTANTIATE_TEST_SUITE_P(Backends, Staging, ::testing::Values("tcp", "verbs"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace poseidon::transport
