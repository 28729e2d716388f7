// The numbers poseidon-perf reports, on synthetic timestamps: perftest's latency statistics and
// the peak bandwidth (checked against perftest's brute-force definition).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "tools/perf/statistics.h"

namespace poseidon::perf {
namespace {

// Post times whose consecutive gaps are `gaps_ns` (round trips).
std::vector<int64_t> postTimes(const std::vector<int64_t>& gaps_ns) {
  std::vector<int64_t> times{1'000'000};
  for (int64_t gap : gaps_ns) times.push_back(times.back() + gap);
  return times;
}

TEST(PerfLatencyStats, PerftestsPrintReportLat) {
  // 11 posts: 10 round trips of 2, 4, ..., 20 us, shuffled. perftest sorts them, drops the 2
  // largest (LAT_MEASURE_TAIL) leaving 8, and halves everything (one way).
  const std::vector<int64_t> gaps = {8000, 2000, 20000, 14000, 4000, 18000, 6000, 12000, 16000, 10000};
  const LatencyStats s = latencyStats(postTimes(gaps));
  EXPECT_DOUBLE_EQ(s.t_min, 1.0);
  // t_max is delta[measure_cnt] = the 9th smallest: 18 us round trip.
  EXPECT_DOUBLE_EQ(s.t_max, 9.0);
  // 8 samples (even): the median is the mean of the 4th and 5th: (8 + 10) / 2 round trip.
  EXPECT_DOUBLE_EQ(s.t_typical, 4.5);
  // Mean of 1..8 one-way.
  EXPECT_DOUBLE_EQ(s.t_avg, 4.5);
  EXPECT_NEAR(s.t_stdev, std::sqrt(5.25), 1e-12);
  // ceil(8 * 0.99) = 8 and ceil(8 * 0.999) = 8: delta[8], as perftest.
  EXPECT_DOUBLE_EQ(s.p99, 9.0);
  EXPECT_DOUBLE_EQ(s.p99_9, 9.0);
}

TEST(PerfLatencyStats, OddCountMedianAndPercentiles) {
  // 1002 posts: 1001 round trips; 999 kept (odd): the median is the middle one.
  std::vector<int64_t> gaps;
  for (int i = 1; i <= 1001; ++i) gaps.push_back(i * 1000);  // 1..1001 us round trip
  std::shuffle(gaps.begin(), gaps.end(), std::mt19937(1));
  const LatencyStats s = latencyStats(postTimes(gaps));
  EXPECT_DOUBLE_EQ(s.t_min, 0.5);
  EXPECT_DOUBLE_EQ(s.t_typical, 500 / 2.0);  // delta[499] = 500 us round trip
  EXPECT_DOUBLE_EQ(s.p99, 991 / 2.0);        // delta[ceil(989.01) = 990] = 991 us round trip
  EXPECT_DOUBLE_EQ(s.p99_9, 1000 / 2.0);     // delta[ceil(998.001) = 999] = 1000 us round trip
  EXPECT_DOUBLE_EQ(s.t_max, 1000 / 2.0);     // delta[measure_cnt = 999]
}

TEST(PerfLatencyStats, TooFewPostsGiveZeros) {
  const LatencyStats s = latencyStats(postTimes({1000, 1000, 1000}));
  EXPECT_EQ(s.t_avg, 0);
  EXPECT_EQ(s.t_max, 0);
}

// perftest's definition, O(n^2): the least time per operation of any window from post i to the
// completion j >= i, completions existing only where an ack confirmed them.
double bruteForcePeak(const std::vector<int64_t>& posts, uint64_t first, const std::vector<Ack>& acks) {
  double best = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < posts.size(); ++r) {
    const uint64_t i = first + r;
    for (const Ack& ack : acks) {
      if (ack.count <= i) continue;
      best = std::min(best, static_cast<double>(ack.time - posts[r]) / static_cast<double>(ack.count - i));
    }
  }
  return std::isfinite(best) ? 1e9 / best : 0;
}

TEST(PerfPeak, SteadyStreamIsItsRate) {
  // One post every 10 us, each acked 50 us later, acks every 4: the rate tends to 100000/s and
  // the best window is the longest one.
  std::vector<int64_t> posts;
  std::vector<Ack> acks;
  for (int i = 0; i < 400; ++i) posts.push_back(i * 10'000);
  for (int count = 4; count <= 400; count += 4)
    acks.push_back({static_cast<uint64_t>(count), (count - 1) * 10'000 + 50'000});
  const double peak = peakOpsPerSecond(posts, 0, acks);
  EXPECT_NEAR(peak, bruteForcePeak(posts, 0, acks), peak * 1e-9);
  EXPECT_NEAR(peak, 400.0 / (399 * 10e-6 + 50e-6), 1e-3);
}

TEST(PerfPeak, FindsABurst) {
  // 100 ops over 100 ms, except ops 40..59 posted and acked within 1 ms.
  std::vector<int64_t> posts(100);
  std::vector<Ack> acks;
  int64_t t = 0;
  for (int i = 0; i < 100; ++i) {
    posts[static_cast<size_t>(i)] = t;
    t += (i >= 40 && i < 60) ? 50'000 : 1'000'000;
    acks.push_back({static_cast<uint64_t>(i + 1), t});
  }
  const double peak = peakOpsPerSecond(posts, 0, acks);
  EXPECT_NEAR(peak, bruteForcePeak(posts, 0, acks), peak * 1e-9);
  EXPECT_GT(peak, 15'000);  // ~20 ops in ~1 ms
}

TEST(PerfPeak, MatchesBruteForceOnRandomTimelines) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t n = 1 + rng() % 300;
    const uint64_t first = rng() % 3 == 0 ? rng() % 1000 : 0;
    std::vector<int64_t> posts(n);
    int64_t t = static_cast<int64_t>(rng() % 1000);
    for (auto& p : posts) {
      p = t;
      t += static_cast<int64_t>(rng() % 5000);
    }
    // Acks at random counts, each after the post of its last op, in order of count and time.
    std::vector<Ack> acks;
    uint64_t count = first;
    int64_t ack_time = posts.front();
    while (true) {
      count += 1 + rng() % 20;
      if (count > first + n + 10) break;
      const size_t last = static_cast<size_t>(std::min<uint64_t>(count - first, n) - 1);
      ack_time = std::max(ack_time, posts[last]) + 1 + static_cast<int64_t>(rng() % 3000);
      acks.push_back({count, ack_time});
    }
    const double expected = bruteForcePeak(posts, first, acks);
    EXPECT_NEAR(peakOpsPerSecond(posts, first, acks), expected, expected * 1e-9) << "trial " << trial;
  }
}

TEST(PerfPeak, NothingToMeasure) {
  EXPECT_EQ(peakOpsPerSecond({}, 0, std::vector<Ack>{{1, 5}}), 0);
  EXPECT_EQ(peakOpsPerSecond(std::vector<int64_t>{1, 2}, 0, {}), 0);
  // Acks that confirm only operations before the recorded ones.
  EXPECT_EQ(peakOpsPerSecond(std::vector<int64_t>{100, 200}, 10, std::vector<Ack>{{5, 300}, {10, 400}}), 0);
}

}  // namespace
}  // namespace poseidon::perf
