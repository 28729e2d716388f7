#include "transport/common/adaptive_spin.h"

#include <sched.h>

#include <algorithm>

namespace poseidon::transport {

void yieldCore() { ::sched_yield(); }

std::chrono::nanoseconds AdaptiveSpin::limit() {
  const int64_t average = average_ns_.load(std::memory_order_relaxed);
  if (2 * average <= cap_ns_) return std::chrono::nanoseconds(std::max<int64_t>(2 * average, cap_ns_ / 8));
  // Waits run long: sleep at once, probing now and then.
  const uint32_t n = waits_.fetch_add(1, std::memory_order_relaxed);
  return (n % 16 == 0) ? std::chrono::nanoseconds(cap_ns_ / 8) : std::chrono::nanoseconds(0);
}

void AdaptiveSpin::record(std::chrono::nanoseconds took) {
  // Clamped so one wait of seconds does not silence spinning for a thousand later ones.
  const int64_t sample = std::min<int64_t>(took.count(), 4 * cap_ns_);
  const int64_t average = average_ns_.load(std::memory_order_relaxed);
  average_ns_.store(average + (sample - average) / 8, std::memory_order_relaxed);
}

}  // namespace poseidon::transport
