// Ranks in separate processes on loopback: a full exchange, and a peer killed with SIGKILL in
// the middle of a transfer (its requests fail within the deadline naming it; others go on).
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "tests/support/mesh.h"
#include "tests/support/process.h"
#include "tests/support/rdma.h"
#include "transport/bootstrap/file_store.h"
#include "transport/device.h"

namespace poseidon::transport {
namespace {

using poseidon::testing::ChildProcess;
using poseidon::testing::makeBuffer;
using poseidon::testing::TempDir;

// Each case runs over a backend: tcp on loopback, verbs on the RDMA netdev that
// POSEIDON_TEST_RDMA_ADDRESS (or the Soft-RoCE guest's SOFTROCE_VM_SELF) names.
struct BackendCase {
  std::string backend;
  int streams;
};
// ctest lists tests by name; without this gtest appends the parameter's raw bytes.
void PrintTo(const BackendCase& c, std::ostream* os) { *os << c.backend << "/" << c.streams << " streams"; }

std::string addressFor(const std::string& backend) {
  return backend == "verbs" ? poseidon::testing::rdmaTestAddress() : "127.0.0.1";
}

std::vector<std::string> peerArgs(const TempDir& dir, int rank, int size, const std::string& role,
                                  const BackendCase& c) {
  return {TRANSPORT_PEER_BINARY,
          "--store",
          dir.path(),
          "--rank",
          std::to_string(rank),
          "--size",
          std::to_string(size),
          "--role",
          role,
          "--streams",
          std::to_string(c.streams),
          "--backend",
          c.backend,
          "--address",
          addressFor(c.backend)};
}

class MultiProcess : public ::testing::TestWithParam<BackendCase> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "verbs" && poseidon::testing::rdmaTestAddress().empty()) {
      GTEST_SKIP() << poseidon::testing::kNoRdmaDevice;
    }
  }
};

std::string caseName(const ::testing::TestParamInfo<BackendCase>& info) {
  return info.param.backend + "_" + std::to_string(info.param.streams) + "streams";
}

TEST_P(MultiProcess, ExchangeEveryByteIntact) {
  TempDir dir;
  ChildProcess a(peerArgs(dir, 0, 2, "exchange", GetParam()), dir.path() + "/rank0.log");
  ChildProcess b(peerArgs(dir, 1, 2, "exchange", GetParam()), dir.path() + "/rank1.log");
  const int code_a = a.stop(0, std::chrono::seconds(90));
  const int code_b = b.stop(0, std::chrono::seconds(90));
  EXPECT_EQ(code_a, 0) << poseidon::testing::read_file(dir.path() + "/rank0.log");
  EXPECT_EQ(code_b, 0) << poseidon::testing::read_file(dir.path() + "/rank1.log");
}

TEST_P(MultiProcess, KilledPeerFailsItsRequestsWithinTheDeadlineAndOthersGoOn) {
  TempDir dir;
  ChildProcess flooder(peerArgs(dir, 1, 3, "flood", GetParam()), dir.path() + "/rank1.log");
  ChildProcess echoer(peerArgs(dir, 2, 3, "echo", GetParam()), dir.path() + "/rank2.log");
  DeviceOptions options;
  options.secret = "peer-secret";
  options.backend = GetParam().backend;
  options.address = addressFor(GetParam().backend);
  options.streams = GetParam().streams;
  auto device = createDevice(options);
  ASSERT_TRUE(device.isOk());
  auto context = (*device)->createContext(0, 3, "peer");
  ASSERT_TRUE(context.isOk());
  auto store = bootstrap::FileStore::open(dir.path());
  ASSERT_TRUE(store.isOk());
  ASSERT_TRUE((*context)->connect(**store, Deadline::after(std::chrono::seconds(30))).isOk());
  Context& ctx = **context;

  auto sink = makeBuffer(ctx, 8 << 20);
  // Two whole messages arrive, the third is cut off by the kill.
  for (int i = 0; i < 2; ++i) {
    auto r = ctx.pair(1).recv(1, *sink.region, 0, sink.bytes.size());
    ASSERT_TRUE(r->wait(Deadline::after(std::chrono::seconds(30))).isOk()) << r->status().toString();
  }
  auto cut = ctx.pair(1).recv(1, *sink.region, 0, sink.bytes.size());
  ASSERT_EQ(::kill(flooder.pid(), SIGKILL), 0);
  const auto start = Clock::now();
  Status st = cut->wait(Deadline::after(std::chrono::seconds(10)));
  const auto waited = Clock::now() - start;
  if (st.isOk()) {
    // The third message may have been complete before the kill landed; the next cannot be.
    auto next = ctx.pair(1).recv(1, *sink.region, 0, sink.bytes.size());
    st = next->wait(Deadline::after(std::chrono::seconds(10)));
  }
  EXPECT_EQ(st.code(), StatusCode::kConnectionError) << st.toString();
  EXPECT_NE(st.message().find("rank 1"), std::string::npos) << st.message();
  EXPECT_LT(waited, std::chrono::seconds(5));

  // Rank 2 is untouched: an echo round trip, then an empty message to end it.
  auto out = makeBuffer(ctx, 100000, 4);
  auto back = makeBuffer(ctx, 100000, 0);
  auto r = ctx.pair(2).recv(0, *back.region, 0, back.bytes.size());
  auto s = ctx.pair(2).send(0, *out.region, 0, out.bytes.size());
  ASSERT_TRUE(r->wait(Deadline::after(std::chrono::seconds(30))).isOk()) << r->status().toString();
  // `out` must outlive its send: the echo coming back does not complete the send's request.
  ASSERT_TRUE(s->wait(Deadline::after(std::chrono::seconds(30))).isOk()) << s->status().toString();
  EXPECT_EQ(back.bytes, out.bytes);
  auto end = ctx.pair(2).send(0, *out.region, 0, 0);
  EXPECT_TRUE(end->wait(Deadline::after(std::chrono::seconds(10))).isOk());
  EXPECT_EQ(echoer.stop(0, std::chrono::seconds(10)), 0) << poseidon::testing::read_file(dir.path() + "/rank2.log");
}

INSTANTIATE_TEST_SUITE_P(Backends, MultiProcess,
                         ::testing::Values(BackendCase{"tcp", 1}, BackendCase{"tcp", 4}, BackendCase{"verbs", 1}),
                         caseName);

}  // namespace
}  // namespace poseidon::transport
