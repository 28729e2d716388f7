// T(M) = a + bM: fitted to probe samples, and derived from a link through the cost model.
#include "trainer/wfbp/cost_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "model/layer.h"

namespace poseidon::trainer {
namespace {

void expectInvalid(const Status& status, const std::string& fragment) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status.toString();
}

TEST(CostFit, RecoversAnExactLine) {
  std::vector<ProbeSample> samples;
  for (uint64_t bytes : {4096u, 65536u, 1048576u, 16777216u}) samples.push_back({bytes, 50e-6 + bytes * 1e-9});
  auto fit = fitMessageCost(samples);
  ASSERT_TRUE(fit.isOk()) << fit.status().toString();
  EXPECT_NEAR(fit->cost.latency_s, 50e-6, 1e-12);
  EXPECT_NEAR(fit->cost.seconds_per_byte, 1e-9, 1e-18);
  EXPECT_LT(fit->rms_residual_s, 1e-12);
  EXPECT_EQ(fit->samples, 4u);
  EXPECT_TRUE(fit->note.empty()) << fit->note;
}

TEST(CostFit, AveragesNoiseOverRepeatedSizes) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 5e-6);
  std::vector<ProbeSample> samples;
  for (int repeat = 0; repeat < 200; ++repeat) {
    for (uint64_t bytes : {1024u, 262144u, 4194304u}) samples.push_back({bytes, 100e-6 + bytes * 2e-9 + noise(rng)});
  }
  auto fit = fitMessageCost(samples);
  ASSERT_TRUE(fit.isOk());
  EXPECT_NEAR(fit->cost.latency_s, 100e-6, 2e-6);
  EXPECT_NEAR(fit->cost.seconds_per_byte, 2e-9, 2e-12);
  EXPECT_NEAR(fit->rms_residual_s, 5e-6, 1e-6);
}

// The failure this fit is for (a CI run on a loaded machine): a probe's largest size ran slow in
// every repetition kept. Least squares then tilted the line below zero latency; the medians hold.
TEST(CostFit, ASizeSlowedThroughoutDoesNotTiltTheLine) {
  constexpr double kLatency = 30e-6, kPerByte = 0.2e-9;
  std::vector<ProbeSample> samples;
  for (uint64_t bytes : {64u, 4096u, 16384u, 65536u, 262144u}) {
    for (int repeat = 0; repeat < 4; ++repeat) {
      const double slowed = bytes == 262144u ? 4e-3 : 0.0;  // preempted for 4 ms each time
      samples.push_back({bytes, kLatency + kPerByte * static_cast<double>(bytes) + slowed + repeat * 1e-7});
    }
  }
  auto fit = fitMessageCost(samples);
  ASSERT_TRUE(fit.isOk()) << fit.status().toString();
  EXPECT_TRUE(fit->note.empty()) << fit->note;
  EXPECT_NEAR(fit->cost.latency_s, kLatency, 1e-6);
  EXPECT_NEAR(fit->cost.seconds_per_byte, kPerByte, 0.01e-9);
}

TEST(CostFit, ClampsANegativeSlope) {
  // Time falls with size: noise. b = 0 and a = the median time.
  const std::vector<ProbeSample> samples = {{1000, 3e-3}, {2000, 2e-3}, {3000, 1e-3}};
  auto fit = fitMessageCost(samples);
  ASSERT_TRUE(fit.isOk());
  EXPECT_EQ(fit->cost.seconds_per_byte, 0.0);
  EXPECT_DOUBLE_EQ(fit->cost.latency_s, 2e-3);
  EXPECT_NE(fit->note.find("clamped to b = 0"), std::string::npos) << fit->note;
}

TEST(CostFit, ClampsANegativeIntercept) {
  // The line through these crosses zero at 500 bytes: a < 0. a = 0, b the median of time / size.
  const std::vector<ProbeSample> samples = {{1000, 1.0}, {2000, 3.0}};
  auto fit = fitMessageCost(samples);
  ASSERT_TRUE(fit.isOk());
  EXPECT_EQ(fit->cost.latency_s, 0.0);
  EXPECT_DOUBLE_EQ(fit->cost.seconds_per_byte, (1.0 / 1000 + 3.0 / 2000) / 2);
  EXPECT_NE(fit->note.find("clamped to a = 0"), std::string::npos) << fit->note;
  EXPECT_GE(fit->cost.latency_s, 0);
  EXPECT_GE(fit->cost.seconds_per_byte, 0);
}

TEST(CostFit, RefusesDegenerateProbes) {
  expectInvalid(fitMessageCost({}).status(), "no probe samples");
  const std::vector<ProbeSample> one_size = {{4096, 1e-4}, {4096, 2e-4}, {4096, 3e-4}};
  expectInvalid(fitMessageCost(one_size).status(), "every probe sample has the same size, 4096 bytes");
  const std::vector<ProbeSample> negative = {{1, 1e-4}, {2, -1e-4}};
  expectInvalid(fitMessageCost(negative).status(), "probe sample 1 (2 bytes) took -0.0001 s");
  const std::vector<ProbeSample> nan = {{1, std::nan("")}, {2, 1e-4}};
  expectInvalid(fitMessageCost(nan).status(), "probe sample 0 (1 bytes) took nan s");
  const std::vector<ProbeSample> too_many(2049, ProbeSample{64, 1e-5});
  expectInvalid(fitMessageCost(too_many).status(), "2049 probe samples, expected at most 2048");
}

TEST(TensorMessageCost, PsAndRingFollowTheirNodeTraffic) {
  const ClusterShape cluster{4, 4, 32};
  const LinkModel link{50e-6, 1.25e9};
  auto ps = tensorMessageCost(scheme::Scheme::kPs, cluster, link);
  ASSERT_TRUE(ps.isOk()) << ps.status().toString();
  EXPECT_NEAR(ps->latency_s, 6 * 50e-6, 1e-15);                // P1+P2-2 messages each way
  EXPECT_NEAR(ps->seconds_per_byte, 6.0 / 4 / 1.25e9, 1e-22);  // (P1+P2-2)/P2 of the tensor each way
  auto ring = tensorMessageCost(scheme::Scheme::kRing, cluster, link);
  ASSERT_TRUE(ring.isOk());
  EXPECT_NEAR(ring->latency_s, 6 * 50e-6, 1e-15);                // 2(P1-1) steps
  EXPECT_NEAR(ring->seconds_per_byte, 6.0 / 4 / 1.25e9, 1e-22);  // 2(P1-1)/P1 of the tensor
  auto half = tensorMessageCost(scheme::Scheme::kRing, cluster, link, Duplex::kHalf);
  ASSERT_TRUE(half.isOk());
  EXPECT_NEAR(half->latency_s, 12 * 50e-6, 1e-15);
  EXPECT_NEAR(half->seconds_per_byte, 12.0 / 4 / 1.25e9, 1e-22);
}

TEST(TensorMessageCost, AgreesWithTheCostModelAtOtherSizes) {
  const ClusterShape cluster{8, 3, 16};
  const LinkModel link{20e-6, 3e9};
  for (scheme::Scheme s : {scheme::Scheme::kPs, scheme::Scheme::kRing}) {
    auto cost = tensorMessageCost(s, cluster, link);
    ASSERT_TRUE(cost.isOk());
    for (uint64_t floats : {1u, 1000u, 123457u, 50000000u}) {
      auto traffic = busiestNodeTraffic(s, model::Layer::other("t", floats), cluster);
      ASSERT_TRUE(traffic.isOk());
      auto seconds = estimateSeconds(*traffic, link);
      ASSERT_TRUE(seconds.isOk());
      EXPECT_NEAR(cost->seconds(floats * 4), *seconds, 1e-12 * *seconds) << scheme::schemeName(s) << " " << floats;
    }
  }
}

TEST(SyncMessageCost, ThePsPaysOneRoundTripAndTheBusierSideOfEachPhase) {
  const LinkModel link{50e-6, 1.25e9};
  auto colocated = syncMessageCost(scheme::Scheme::kPs, ClusterShape{4, 4, 32}, link);
  ASSERT_TRUE(colocated.isOk()) << colocated.status().toString();
  EXPECT_NEAR(colocated->latency_s, 2 * 50e-6, 1e-15);
  EXPECT_NEAR(colocated->seconds_per_byte, 2 / 1.25e9, 1e-22);
  // Fewer servers than workers: each server's downlink takes P1/P2 of the tensor in the push.
  auto few = syncMessageCost(scheme::Scheme::kPs, ClusterShape{8, 2, 32}, link);
  ASSERT_TRUE(few.isOk());
  EXPECT_NEAR(few->seconds_per_byte, 2 * 4 / 1.25e9, 1e-22);
  auto half = syncMessageCost(scheme::Scheme::kPs, ClusterShape{4, 4, 32}, link, Duplex::kHalf);
  ASSERT_TRUE(half.isOk());
  EXPECT_NEAR(half->seconds_per_byte, 4 / 1.25e9, 1e-22);
  // The ring's steps are one after another: as the cost model prices them.
  auto ring = syncMessageCost(scheme::Scheme::kRing, ClusterShape{4, 4, 32}, link);
  auto ring_model = tensorMessageCost(scheme::Scheme::kRing, ClusterShape{4, 4, 32}, link);
  ASSERT_TRUE(ring.isOk() && ring_model.isOk());
  EXPECT_EQ(ring->latency_s, ring_model->latency_s);
  EXPECT_EQ(ring->seconds_per_byte, ring_model->seconds_per_byte);
  expectInvalid(syncMessageCost(scheme::Scheme::kPs, ClusterShape{4, 4, 32}, {-1, 1e9}).status(), "latency -1");
  expectInvalid(syncMessageCost(scheme::Scheme::kPs, ClusterShape{4, 4, 32}, {0, 0}).status(), "rate 0");
  expectInvalid(syncMessageCost(scheme::Scheme::kSfb, ClusterShape{4, 4, 32}, link).status(), "SFB");
}

TEST(TensorMessageCost, RefusesFactorSchemesAndBadLinks) {
  const ClusterShape cluster{4, 4, 32};
  expectInvalid(tensorMessageCost(scheme::Scheme::kSfb, cluster, {50e-6, 1e9}).status(), "SFB");
  expectInvalid(tensorMessageCost(scheme::Scheme::kAdam, cluster, {50e-6, 1e9}).status(), "Adam");
  expectInvalid(tensorMessageCost(scheme::Scheme::kPs, cluster, {-1, 1e9}).status(), "latency");
  expectInvalid(tensorMessageCost(scheme::Scheme::kRing, cluster, {0, 0}).status(), "rate");
  expectInvalid(tensorMessageCost(scheme::Scheme::kRing, ClusterShape{0, 1, 1}, {0, 1e9}).status(), "0");
}

}  // namespace
}  // namespace poseidon::trainer
