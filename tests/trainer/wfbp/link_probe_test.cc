// The link probe on two in-process ranks over loopback TCP: samples of every size from the
// initiator, none from the responder, a cost that fits them; bad options named; a peer that never
// answers is a deadline, not a hang.
#include "trainer/wfbp/link_probe.h"

#include <gtest/gtest.h>

#include <future>

#include "tests/support/mesh.h"

namespace poseidon::trainer {
namespace {

transport::DeviceOptions loopback() {
  transport::DeviceOptions options;
  options.address = "127.0.0.1";
  return options;
}

TEST(LinkProbe, TheInitiatorTimesEverySizeAndTheFitIsSane) {
  auto mesh = testing::makeMesh(2, loopback(), "probe");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  LinkProbeOptions options;
  options.sizes = {64, 65536};
  options.repetitions = 4;
  const Deadline deadline = Deadline::after(std::chrono::seconds(20));
  auto responder = std::async(std::launch::async, [&] { return probeLink((*mesh)[1], 0, false, options, deadline); });
  auto samples = probeLink((*mesh)[0], 1, true, options, deadline);
  auto answered = responder.get();
  ASSERT_TRUE(samples.isOk()) << samples.status().toString();
  ASSERT_TRUE(answered.isOk()) << answered.status().toString();
  EXPECT_TRUE(answered->empty());
  ASSERT_EQ(samples->size(), 4u);  // the faster half of 4 repetitions, per size
  for (const ProbeSample& s : *samples) {
    EXPECT_TRUE(s.bytes == 64 || s.bytes == 65536);
    EXPECT_GT(s.seconds, 0.0);
    EXPECT_LT(s.seconds, 1.0);
  }
  auto fit = fitMessageCost(*samples);
  ASSERT_TRUE(fit.isOk()) << fit.status().toString();
  EXPECT_GE(fit->cost.latency_s, 0.0);
  EXPECT_GE(fit->cost.seconds_per_byte, 0.0);
}

TEST(LinkProbe, BadOptionsAndASilentPeerAreErrors) {
  auto mesh = testing::makeMesh(2, loopback(), "probe-bad");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  LinkProbeOptions none;
  none.sizes.clear();
  auto refused = probeLink((*mesh)[0], 1, true, none, Deadline::after(std::chrono::seconds(1)));
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("0 sizes"), std::string::npos) << refused.status().toString();
  LinkProbeOptions one;
  one.sizes = {64};
  one.repetitions = 1;
  const auto began = Clock::now();
  auto silent = probeLink((*mesh)[0], 1, true, one, Deadline::after(std::chrono::milliseconds(300)));
  EXPECT_FALSE(silent.isOk());
  EXPECT_LT(Clock::now() - began, std::chrono::seconds(5));
}

}  // namespace
}  // namespace poseidon::trainer
