#include "transport/common/adaptive_spin.h"

#include <sched.h>

#include <algorithm>

namespace poseidon::transport {

void yieldCore() { ::sched_yield(); }

std::chrono::nanoseconds AdaptiveSpin::limit() {
  if (hit_rate_.load(std::memory_order_relaxed) >= kOne / 2) {
    const int64_t typical = success_ns_.load(std::memory_order_relaxed);
    return std::chrono::nanoseconds(std::clamp<int64_t>(2 * typical, cap_ns_ / 8, cap_ns_));
  }
  // Spins mostly end with the wait still pending: sleep at once, probing now and then.
  const uint32_t n = waits_.fetch_add(1, std::memory_order_relaxed);
  return std::chrono::nanoseconds(n % 16 == 0 ? cap_ns_ : 0);
}

void AdaptiveSpin::record(bool done, std::chrono::nanoseconds took) {
  // Moving averages over about the last 8 spins.
  const int64_t rate = hit_rate_.load(std::memory_order_relaxed);
  hit_rate_.store(rate + ((done ? kOne : 0) - rate) / 8, std::memory_order_relaxed);
  if (!done) return;
  const int64_t typical = success_ns_.load(std::memory_order_relaxed);
  success_ns_.store(typical + (std::min<int64_t>(took.count(), cap_ns_) - typical) / 8, std::memory_order_relaxed);
}

}  // namespace poseidon::transport
