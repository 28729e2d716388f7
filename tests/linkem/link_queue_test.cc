#include "tools/linkem/link_queue.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

namespace poseidon::linkem {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

const Clock::time_point kT0 = Clock::time_point(std::chrono::seconds(1000));

// A packet whose first 4 bytes are its number.
std::vector<std::byte> packet(std::uint32_t number, std::size_t size = 100) {
  std::vector<std::byte> p(std::max<std::size_t>(size, sizeof number));
  std::memcpy(p.data(), &number, sizeof number);
  return p;
}

std::uint32_t number_of(std::span<const std::byte> p) {
  std::uint32_t n = 0;
  std::memcpy(&n, p.data(), sizeof n);
  return n;
}

struct Released {
  std::uint32_t number;
  Clock::time_point at;
};

// Releases everything, stepping time to each next release, and records when each packet left.
std::vector<Released> drain(LinkQueue& q) {
  std::vector<Released> out;
  while (auto next = q.next_release()) {
    q.release(*next, [&](std::span<const std::byte> p) { out.push_back({number_of(p), *next}); });
  }
  return out;
}

TEST(LinkQueue, HoldsEachPacketForTheDelay) {
  LinkQueue q(LinkConfig{.delay = milliseconds(20)});
  const auto sent = packet(7, 300);
  EXPECT_EQ(q.offer(sent, kT0), Verdict::queued);
  ASSERT_TRUE(q.next_release().has_value());
  EXPECT_EQ(*q.next_release(), kT0 + milliseconds(20));

  int handed = 0;
  EXPECT_EQ(q.release(kT0 + milliseconds(20) - nanoseconds(1), [&](auto) { ++handed; }), 0u);
  EXPECT_EQ(handed, 0);
  std::vector<std::byte> received;
  EXPECT_EQ(
      q.release(kT0 + milliseconds(20), [&](std::span<const std::byte> p) { received.assign(p.begin(), p.end()); }),
      1u);
  EXPECT_EQ(received, sent);
  EXPECT_FALSE(q.next_release().has_value());
  EXPECT_EQ(q.stats().released, 1u);
  EXPECT_EQ(q.stats().released_bytes, 300u);
}

TEST(LinkQueue, ZeroDelayReleasesAtArrival) {
  LinkQueue q(LinkConfig{});
  q.offer(packet(1), kT0);
  int handed = 0;
  EXPECT_EQ(q.release(kT0, [&](auto) { ++handed; }), 1u);
  EXPECT_EQ(handed, 1);
}

TEST(LinkQueue, KeepsArrivalOrderWithoutJitter) {
  LinkQueue q(LinkConfig{.delay = milliseconds(5)});
  Clock::time_point t = kT0;
  for (std::uint32_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(q.offer(packet(i, 40 + i % 1400), t), Verdict::queued);
    t += microseconds(i % 3 == 0 ? 0 : 37);  // some packets arrive at the same instant
  }
  const auto out = drain(q);
  ASSERT_EQ(out.size(), 1000u);
  t = kT0;
  for (std::uint32_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].number, i);
    EXPECT_EQ(out[i].at, t + milliseconds(5));
    t += microseconds(i % 3 == 0 ? 0 : 37);
  }
}

TEST(LinkQueue, JitterStaysWithinBoundsAndReleasesByTime) {
  LinkQueue q(LinkConfig{.delay = milliseconds(20), .jitter = milliseconds(5), .seed = 3});
  std::vector<Clock::time_point> arrival;
  for (std::uint32_t i = 0; i < 2000; ++i) {
    arrival.push_back(kT0 + microseconds(100) * i);
    q.offer(packet(i), arrival.back());
  }
  const auto out = drain(q);
  ASSERT_EQ(out.size(), 2000u);
  bool reordered = false;
  double min_ms = 1e9, max_ms = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double d = std::chrono::duration<double, std::milli>(out[i].at - arrival[out[i].number]).count();
    min_ms = std::min(min_ms, d);
    max_ms = std::max(max_ms, d);
    if (i > 0) {
      EXPECT_LE(out[i - 1].at, out[i].at);
      reordered |= out[i].number < out[i - 1].number;
    }
  }
  EXPECT_GE(min_ms, 15.0);
  EXPECT_LE(max_ms, 25.0);
  EXPECT_LT(min_ms, 16.0);  // the whole range is used
  EXPECT_GT(max_ms, 24.0);
  EXPECT_TRUE(reordered) << "5 ms of jitter on packets 0.1 ms apart should reorder some";
}

TEST(LinkQueue, JitterLargerThanDelayNeverGoesNegative) {
  LinkQueue q(LinkConfig{.delay = milliseconds(1), .jitter = milliseconds(10), .seed = 9});
  for (std::uint32_t i = 0; i < 500; ++i) q.offer(packet(i), kT0);
  const auto out = drain(q);
  ASSERT_EQ(out.size(), 500u);
  for (const auto& r : out) {
    EXPECT_GE(r.at, kT0);
    EXPECT_LE(r.at, kT0 + milliseconds(11));
  }
}

// Fraction lost out of n packets with the given loss and seed.
double loss_fraction(double loss, std::uint64_t seed, int n) {
  LinkQueue q(LinkConfig{.loss = loss, .seed = seed});
  int lost = 0;
  for (int i = 0; i < n; ++i) {
    if (q.offer(packet(static_cast<std::uint32_t>(i)), kT0) == Verdict::lost) ++lost;
    q.release(kT0, [](auto) {});
  }
  EXPECT_EQ(q.stats().lost, static_cast<std::uint64_t>(lost));
  EXPECT_EQ(q.stats().released, static_cast<std::uint64_t>(n - lost));
  return static_cast<double>(lost) / n;
}

TEST(LinkQueue, LossRateMatchesTheProbability) {
  // 100000 draws at p = 0.2: standard deviation 0.00126, so +-0.01 is about 8 sigma.
  for (std::uint64_t seed : {1u, 42u, 12345u}) {
    EXPECT_NEAR(loss_fraction(0.2, seed, 100000), 0.2, 0.01) << "seed " << seed;
  }
  EXPECT_NEAR(loss_fraction(0.01, 5, 100000), 0.01, 0.003);
  EXPECT_NEAR(loss_fraction(0.5, 5, 100000), 0.5, 0.01);
}

TEST(LinkQueue, LossZeroAndOneAreExact) {
  EXPECT_EQ(loss_fraction(0.0, 1, 10000), 0.0);
  EXPECT_EQ(loss_fraction(1.0, 1, 10000), 1.0);
}

TEST(LinkQueue, SameSeedGivesTheSameLossPattern) {
  auto pattern = [](std::uint64_t seed) {
    LinkQueue q(LinkConfig{.loss = 0.3, .seed = seed});
    std::vector<bool> lost;
    for (std::uint32_t i = 0; i < 1000; ++i) lost.push_back(q.offer(packet(i), kT0) == Verdict::lost);
    return lost;
  };
  EXPECT_EQ(pattern(17), pattern(17));
  EXPECT_NE(pattern(17), pattern(18));
}

TEST(LinkQueue, RateLimitSpacesPacketsAfterTheBurst) {
  // 1 Mbit/s = 125000 bytes/s: a 1250-byte packet takes 10 ms. The bucket starts full with
  // 2500 bytes, so the first two packets go at once.
  LinkQueue q(LinkConfig{.delay = milliseconds(20), .rate_bytes_per_s = 125000.0, .burst_bytes = 2500});
  for (std::uint32_t i = 0; i < 100; ++i) ASSERT_EQ(q.offer(packet(i, 1250), kT0), Verdict::queued);
  const auto out = drain(q);
  ASSERT_EQ(out.size(), 100u);
  for (std::uint32_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].number, i);
    const auto expected = kT0 + milliseconds(20) + milliseconds(10) * (i < 2 ? 0 : i - 1);
    EXPECT_LE(out[i].at, expected + microseconds(1)) << "packet " << i;
    EXPECT_GE(out[i].at, expected - microseconds(1)) << "packet " << i;
  }
  // 100 * 1250 bytes in (990 ms - 0): throughput is the rate (less the initial burst).
  const double seconds = std::chrono::duration<double>(out.back().at - out.front().at).count();
  EXPECT_NEAR((100 - 2) * 1250 / seconds, 125000.0, 200.0);
}

TEST(LinkQueue, RateLimitRefillsWhileIdleUpToTheBurst) {
  LinkQueue q(LinkConfig{.rate_bytes_per_s = 100000.0, .burst_bytes = 3000});
  for (std::uint32_t i = 0; i < 3; ++i) q.offer(packet(i, 1000), kT0);
  EXPECT_EQ(q.release(kT0, [](auto) {}), 3u);  // the full bucket
  q.offer(packet(3, 1000), kT0);
  EXPECT_EQ(*q.next_release(), kT0 + milliseconds(10));  // empty: 1000 bytes at 100 kB/s
  q.release(kT0 + milliseconds(10), [](auto) {});
  // A long pause refills only up to the burst: 3 packets at once, the 4th waits 10 ms.
  const auto later = kT0 + std::chrono::seconds(5);
  for (std::uint32_t i = 4; i < 8; ++i) q.offer(packet(i, 1000), later);
  EXPECT_EQ(q.release(later, [](auto) {}), 3u);
  EXPECT_EQ(*q.next_release(), later + milliseconds(10));
}

TEST(LinkQueue, QueueLimitDropsArrivalsBeyondIt) {
  LinkQueue q(LinkConfig{.delay = milliseconds(50), .queue_limit = 10});
  int full = 0;
  for (std::uint32_t i = 0; i < 25; ++i)
    if (q.offer(packet(i), kT0 + microseconds(i)) == Verdict::queue_full) ++full;
  EXPECT_EQ(full, 15);
  EXPECT_EQ(q.size(), 10u);
  EXPECT_EQ(q.stats().queue_full, 15u);
  const auto out = drain(q);
  ASSERT_EQ(out.size(), 10u);
  EXPECT_EQ(out.back().number, 9u);  // the first ten got through
  EXPECT_EQ(q.offer(packet(99), kT0 + std::chrono::seconds(1)), Verdict::queued);
}

TEST(LinkQueue, ReusesBuffersForPacketsOfAnySize) {
  LinkQueue q(LinkConfig{.delay = milliseconds(1)});
  Clock::time_point t = kT0;
  for (std::uint32_t i = 0; i < 100; ++i) {
    const auto p = packet(i, i % 2 == 0 ? 9000 : 20);
    q.offer(p, t);
    t += milliseconds(1);
    q.release(t, [&](std::span<const std::byte> got) {
      EXPECT_EQ(got.size(), p.size());
      EXPECT_EQ(number_of(got), i);
    });
  }
  EXPECT_EQ(q.stats().released, 100u);
}

TEST(LinkQueue, RejectsBadConfigurations) {
  EXPECT_THROW((LinkQueue(LinkConfig{.loss = 1.5})), std::invalid_argument);
  EXPECT_THROW((LinkQueue(LinkConfig{.loss = -0.1})), std::invalid_argument);
  EXPECT_THROW((LinkQueue(LinkConfig{.delay = milliseconds(-1)})), std::invalid_argument);
  EXPECT_THROW((LinkQueue(LinkConfig{.rate_bytes_per_s = 1000.0, .burst_bytes = 0})), std::invalid_argument);
  EXPECT_THROW((LinkQueue(LinkConfig{.queue_limit = 0})), std::invalid_argument);
  EXPECT_NE(validate(LinkConfig{.loss = 2.0}).find("loss 2"), std::string::npos);
}

}  // namespace
}  // namespace poseidon::linkem
