// The numbers perftest reports, computed from timestamps (nanoseconds of one steady clock).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

namespace poseidon::perf {

inline int64_t nowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// perftest's print_report_lat: samples are the gaps between consecutive ping posts (one round
// trip each), sorted, the top LAT_MEASURE_TAIL = 2 dropped; t_typical is the median, t_max is
// the sorted sample at index count (as perftest), the percentiles are the samples at
// ceil(count * 0.99) and ceil(count * 0.999). Everything is one-way: round trip / 2, in usec.
struct LatencyStats {
  double t_min = 0;
  double t_max = 0;
  double t_typical = 0;
  double t_avg = 0;
  double t_stdev = 0;
  double p99 = 0;
  double p99_9 = 0;
};

inline constexpr uint64_t kMinLatencyPosts = 5;  // perftest's MIN_ITER

// `post_times` holds the time of each ping, at least kMinLatencyPosts of them, in order.
LatencyStats latencyStats(std::span<const int64_t> post_times);

// The server's confirmation that the first `count` operations have landed, as the client saw it.
struct Ack {
  uint64_t count = 0;
  int64_t time = 0;
};

// Peak message rate (operations per second), perftest's way: perftest takes, over every pair of
// a posted operation i and a completion j >= i (completions only every cq_mod operations), the
// least (tcompleted[j] - tposted[i]) / (j - i + 1), and reports size / that time as "BW peak".
// Here a completion is an Ack: the server saw operations [0, count) land, so it completes
// operation count - 1. A TCP send "completes" once the socket buffer took it, long before
// delivery, so local completions would report the speed of memcpy; acks bound every window by
// real delivery. `post_times[k]` is the post time of operation `first_index + k`. The least
// time per operation is found exactly, by bisection over it: a time per operation t is reached
// by some window iff, for some ack, max over i < count of (P[i] - t*i) >= time - t*count, which
// one pass over posts and acks (both in order) decides. Returns 0 when no window exists.
double peakOpsPerSecond(std::span<const int64_t> post_times, uint64_t first_index, std::span<const Ack> acks);

}  // namespace poseidon::perf
