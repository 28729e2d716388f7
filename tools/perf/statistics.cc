#include "tools/perf/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace poseidon::perf {
namespace {

constexpr size_t kLatMeasureTail = 2;  // perftest's LAT_MEASURE_TAIL
constexpr double kRttFactor = 2.0;     // send and write latencies are half a round trip
constexpr double kNanosPerMicro = 1000.0;

// perftest's get_median, on the first n sorted samples.
double median(const std::vector<double>& sorted, size_t n) {
  if ((n - 1) % 2) return (sorted[n / 2] + sorted[n / 2 - 1]) / 2;
  return sorted[n / 2];
}

}  // namespace

LatencyStats latencyStats(std::span<const int64_t> post_times) {
  LatencyStats s;
  if (post_times.size() < kMinLatencyPosts) return s;
  std::vector<double> delta(post_times.size() - 1);
  for (size_t i = 0; i + 1 < post_times.size(); ++i) {
    delta[i] = static_cast<double>(post_times[i + 1] - post_times[i]) / (kRttFactor * kNanosPerMicro);
  }
  std::sort(delta.begin(), delta.end());
  const size_t count = delta.size() - kLatMeasureTail;
  double sum = 0;
  for (size_t i = 0; i < count; ++i) sum += delta[i];
  s.t_avg = sum / static_cast<double>(count);
  double squares = 0;
  for (size_t i = 0; i < count; ++i) squares += (delta[i] - s.t_avg) * (delta[i] - s.t_avg);
  s.t_stdev = std::sqrt(squares / static_cast<double>(count));
  s.t_min = delta[0];
  s.t_max = delta[count];
  s.t_typical = median(delta, count);
  s.p99 = delta[static_cast<size_t>(std::ceil(static_cast<double>(count) * 0.99))];
  s.p99_9 = delta[static_cast<size_t>(std::ceil(static_cast<double>(count) * 0.999))];
  return s;
}

double peakOpsPerSecond(std::span<const int64_t> post_times, uint64_t first_index, std::span<const Ack> acks) {
  if (post_times.empty()) return 0;
  const int64_t origin = post_times.front();
  const auto posted = static_cast<uint64_t>(post_times.size());
  auto post = [&](uint64_t r) { return static_cast<double>(post_times[r] - origin); };

  // A feasible start: for each ack, the window from the first recorded operation.
  double hi = std::numeric_limits<double>::infinity();
  for (const Ack& ack : acks) {
    if (ack.count <= first_index) continue;
    const double span = static_cast<double>(ack.time - origin);
    hi = std::min(hi, span / static_cast<double>(ack.count - first_index));
  }
  if (!std::isfinite(hi) || hi <= 0) return 0;

  // Whether some window [i, count) takes at most t nanoseconds per operation.
  auto reachable = [&](double t) {
    double best = -std::numeric_limits<double>::infinity();
    uint64_t r = 0;
    for (const Ack& ack : acks) {
      if (ack.count <= first_index) continue;
      const uint64_t end = ack.count - first_index;  // relative to first_index
      for (const uint64_t limit = std::min(end, posted); r < limit; ++r) {
        best = std::max(best, post(r) - t * static_cast<double>(r));
      }
      if (best >= static_cast<double>(ack.time - origin) - t * static_cast<double>(end)) return true;
    }
    return false;
  };
  double lo = 0;
  for (int step = 0; step < 100 && hi - lo > hi * 1e-12; ++step) {
    const double mid = (lo + hi) / 2;
    if (reachable(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return 1e9 / hi;
}

}  // namespace poseidon::perf
