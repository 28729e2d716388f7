#include "transport/common/send_budget.h"

#include <algorithm>
#include <cmath>

namespace poseidon::transport {

SendBudget::SendBudget(uint64_t bytes_per_second, uint64_t burst_bytes, Clock::time_point now)
    : rate_(std::max<uint64_t>(1, bytes_per_second)),
      burst_(std::max<uint64_t>(1, burst_bytes)),
      tokens_(static_cast<double>(burst_)),
      last_(now) {}

uint64_t SendBudget::defaultBurst(uint64_t bytes_per_second) {
  return std::max<uint64_t>(uint64_t{64} << 10, bytes_per_second / 200);
}

void SendBudget::refillLocked(Clock::time_point now) {
  if (now <= last_) return;
  const double seconds = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + seconds * static_cast<double>(rate_));
  last_ = now;
}

uint64_t SendBudget::take(uint64_t want, uint64_t at_least, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  refillLocked(now);
  const uint64_t have = static_cast<uint64_t>(std::floor(tokens_ + 1e-6));
  if (have < std::min({want, at_least, burst_})) return 0;
  const uint64_t granted = std::min(want, have);
  tokens_ = std::max(0.0, tokens_ - static_cast<double>(granted));
  return granted;
}

void SendBudget::giveBack(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + static_cast<double>(bytes));
}

std::chrono::nanoseconds SendBudget::timeUntil(uint64_t bytes, Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  const double elapsed = now > last_ ? std::chrono::duration<double>(now - last_).count() : 0.0;
  const double have = std::min(static_cast<double>(burst_), tokens_ + elapsed * static_cast<double>(rate_));
  const double missing = static_cast<double>(std::min(bytes, burst_)) - have;
  if (missing <= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(std::ceil(missing * 1e9 / static_cast<double>(rate_))));
}

}  // namespace poseidon::transport
