// Per-layer backward times from the report times of the first iterations.
#include "trainer/wfbp/backward_profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace poseidon::trainer {
namespace {

using std::chrono::microseconds;

// An iteration starting at `start_us` whose layers take `layer_us` each, in backward order.
BackwardIteration iteration(int64_t start_us, const std::vector<int64_t>& layer_us) {
  BackwardIteration it;
  it.backward_start = Clock::time_point(microseconds(start_us));
  Clock::time_point now = it.backward_start;
  for (int64_t us : layer_us) it.reported.push_back(now += microseconds(us));
  return it;
}

TEST(BackwardProfile, MedianPerLayer) {
  const std::vector<BackwardIteration> iterations = {
      iteration(0, {100, 10, 1000}), iteration(5000, {120, 12, 900}),
      iteration(10000, {5000, 11, 950}),  // a slow first layer (warm-up) does not move the median
  };
  auto profile = profileBackward(iterations, 3);
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  ASSERT_EQ(profile->backward_s.size(), 3u);
  EXPECT_NEAR(profile->backward_s[0], 120e-6, 1e-12);
  EXPECT_NEAR(profile->backward_s[1], 11e-6, 1e-12);
  EXPECT_NEAR(profile->backward_s[2], 950e-6, 1e-12);
  EXPECT_EQ(profile->iterations_used, 3u);
  EXPECT_TRUE(profile->skipped.empty());
}

TEST(BackwardProfile, EvenCountTakesTheMiddlePairsMean) {
  const std::vector<BackwardIteration> iterations = {iteration(0, {100}), iteration(0, {400}), iteration(0, {200}),
                                                     iteration(0, {300})};
  auto profile = profileBackward(iterations, 1);
  ASSERT_TRUE(profile.isOk());
  EXPECT_NEAR(profile->backward_s[0], 250e-6, 1e-12);
}

TEST(BackwardProfile, LeavesOutIncompleteAndDisorderedIterations) {
  std::vector<BackwardIteration> iterations = {iteration(0, {100, 200}), iteration(1000, {100, 200}),
                                               iteration(2000, {300, 400}), iteration(3000, {100, 200})};
  iterations[1].reported[1].reset();                                           // a layer not reported
  iterations[2].reported[1] = iterations[2].backward_start - microseconds(5);  // before layer 0
  iterations.push_back(BackwardIteration{});                                   // an iteration missing entirely
  auto profile = profileBackward(iterations, 2);
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  EXPECT_EQ(profile->iterations_used, 2u);
  EXPECT_NEAR(profile->backward_s[0], 100e-6, 1e-12);
  EXPECT_NEAR(profile->backward_s[1], 200e-6, 1e-12);
  ASSERT_EQ(profile->skipped.size(), 3u);
  EXPECT_EQ(profile->skipped[0], "iteration 1: layer 1 (backward order) was not reported");
  EXPECT_EQ(profile->skipped[1], "iteration 2: layer 1 (backward order) was reported 305000 ns before layer 0");
  EXPECT_EQ(profile->skipped[2], "iteration 4: it has 0 layers, expected 2");
}

TEST(BackwardProfile, AReportBeforeTheStartIsLeftOut) {
  BackwardIteration early = iteration(1000, {10});
  early.reported[0] = Clock::time_point(microseconds(999));
  const std::vector<BackwardIteration> iterations = {early, iteration(0, {10})};
  auto profile = profileBackward(iterations, 1);
  ASSERT_TRUE(profile.isOk());
  EXPECT_EQ(profile->iterations_used, 1u);
  EXPECT_NE(profile->skipped[0].find("before the backward start"), std::string::npos) << profile->skipped[0];
}

TEST(BackwardProfile, FailsWithoutAUsableIteration) {
  std::vector<BackwardIteration> iterations = {iteration(0, {1, 2})};
  iterations[0].reported[0].reset();
  const Status status = profileBackward(iterations, 2).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no usable iteration of 1; iteration 0: layer 0 (backward order) was not reported"),
            std::string::npos)
      << status.toString();
  EXPECT_FALSE(profileBackward({}, 2).isOk());
  EXPECT_FALSE(profileBackward(iterations, 0).isOk());
}

}  // namespace
}  // namespace poseidon::trainer
