// The benchmark's cost-model column (tools/hybcomm/bench_model.h): the busiest node on the common
// link, and a lowered worker link priced on that worker's own traffic, upload only or both ways.
#include <gtest/gtest.h>

#include "tools/hybcomm/bench_model.h"

namespace poseidon::tools {
namespace {

using scheme::Scheme;

constexpr size_t kPs = static_cast<size_t>(scheme::Scheme::kPs);
constexpr size_t kSfb = static_cast<size_t>(scheme::Scheme::kSfb);
constexpr size_t kAdam = static_cast<size_t>(scheme::Scheme::kAdam);
constexpr size_t kRing = static_cast<size_t>(scheme::Scheme::kRing);

// M = N = 1000, K = 10, P1 = 4, P2 = 2: X = 1e6 floats, one worker's factors K(M+N) = 2e4 floats.
const model::Layer kFc = model::Layer::fullyConnected("fc", 1000, 1000, false);
const trainer::ClusterShape kCluster{4, 2, 10};
constexpr double kGigabyte = 8e9;  // bits/s of 1e9 bytes/s

TEST(HybBenchModel, NoLinksNoFigures) {
  for (double t : modelSeconds(kFc, kCluster, {})) EXPECT_EQ(t, -1);
}

TEST(HybBenchModel, CommonLinkPricesTheBusiestNode) {
  const auto t = modelSeconds(kFc, kCluster, {kGigabyte, 0, 0, false});
  // PS colocated node: X (P2-1 + P1-1) / P2 = 2e6 floats each way = 8 MB at 1 GB/s.
  EXPECT_DOUBLE_EQ(t[kPs], 8e-3);
  // SFB: 3 x 2e4 floats each way = 240 KB.
  EXPECT_DOUBLE_EQ(t[kSfb], 240e-6);
  // Adam server: P1 X floats out = 16 MB.
  EXPECT_DOUBLE_EQ(t[kAdam], 16e-3);
  // Ring: 2 X (P1-1) / P1 = 1.5e6 floats each way = 6 MB.
  EXPECT_DOUBLE_EQ(t[kRing], 6e-3);
  // Latency: per message of the slower direction (full duplex), here SFB's 3 to its peers.
  const auto with_latency = modelSeconds(kFc, kCluster, {kGigabyte, 1e-3, 0, false});
  EXPECT_DOUBLE_EQ(with_latency[kSfb], 240e-6 + 3 * 1e-3);
}

TEST(HybBenchModel, OtherLayersHaveNoSfbOrAdam) {
  const auto t = modelSeconds(model::Layer::other("conv", 1000000), kCluster, {kGigabyte, 0, 0, false});
  EXPECT_EQ(t[kSfb], -1);
  EXPECT_EQ(t[kAdam], -1);
  EXPECT_DOUBLE_EQ(t[kPs], 8e-3);
}

TEST(HybBenchModel, ALoweredWorkerLinkBoundsWhatItCarries) {
  // Worker 3 (no server) at 1e8 bytes/s. Both ways: its Adam pull (X = 4 MB in) takes 40 ms, more
  // than the Adam server's 16 ms; upload only, the pull comes at the common rate and the server
  // bounds it. PS: the worker pushes X = 4 MB up either way: 40 ms.
  const auto both = modelSeconds(kFc, kCluster, {kGigabyte, 0, 8e8, false});
  const auto up = modelSeconds(kFc, kCluster, {kGigabyte, 0, 8e8, true});
  EXPECT_DOUBLE_EQ(both[kAdam], 40e-3);
  EXPECT_DOUBLE_EQ(up[kAdam], 16e-3);
  EXPECT_DOUBLE_EQ(both[kPs], 40e-3);
  EXPECT_DOUBLE_EQ(up[kPs], 40e-3);
  EXPECT_DOUBLE_EQ(up[kSfb], 2.4e-3);  // its 3 x 2e4 floats up at 1e8 bytes/s
  // A "slow" link faster than the common one changes nothing.
  const auto faster = modelSeconds(kFc, kCluster, {kGigabyte, 0, 2 * kGigabyte, false});
  EXPECT_DOUBLE_EQ(faster[kPs], 8e-3);
}

}  // namespace
}  // namespace poseidon::tools
