#include "tools/linkem/link_queue.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace poseidon::linkem {
namespace {

bool later(const auto& a, const auto& b) {  // heap order: earliest release, then arrival order
  return a.release != b.release ? a.release > b.release : a.seq > b.seq;
}

}  // namespace

std::string validate(const LinkConfig& c) {
  if (c.delay.count() < 0) return fmt::format("delay {} ns: expected >= 0", c.delay.count());
  if (c.jitter.count() < 0) return fmt::format("jitter {} ns: expected >= 0", c.jitter.count());
  if (!(c.loss >= 0.0 && c.loss <= 1.0)) return fmt::format("loss {}: expected a probability between 0 and 1", c.loss);
  if (!(c.rate_bytes_per_s >= 0.0 && std::isfinite(c.rate_bytes_per_s)))
    return fmt::format("rate {} bytes/s: expected a finite value >= 0 (0 = unlimited)", c.rate_bytes_per_s);
  if (c.rate_bytes_per_s > 0.0 && c.burst_bytes == 0) return "burst 0 bytes: expected > 0 when a rate is set";
  if (c.queue_limit == 0) return "queue limit 0 packets: expected > 0";
  return {};
}

LinkQueue::LinkQueue(const LinkConfig& config) : config_(config), rng_(config.seed) {
  if (std::string error = validate(config); !error.empty()) throw std::invalid_argument(error);
  tokens_ = static_cast<double>(config_.burst_bytes);
}

double LinkQueue::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

Clock::time_point LinkQueue::shaped_departure(std::size_t bytes, Clock::time_point now) {
  if (config_.rate_bytes_per_s <= 0.0) return now;
  const double rate = config_.rate_bytes_per_s;
  const double burst = static_cast<double>(config_.burst_bytes);
  // Packets leave the bucket in arrival order: this one starts waiting when the last one left.
  Clock::time_point start = now;
  if (bucket_time_ && *bucket_time_ > start) start = *bucket_time_;
  double tokens = tokens_;
  if (bucket_time_) {
    const double idle_s = std::chrono::duration<double>(start - *bucket_time_).count();
    tokens = std::min(burst, tokens + idle_s * rate);
  }
  const double need = static_cast<double>(bytes);
  Clock::time_point depart = start;
  if (tokens >= need) {
    tokens -= need;
  } else {
    const double wait_ns = std::ceil((need - tokens) / rate * 1e9);
    depart = start + std::chrono::nanoseconds(static_cast<std::int64_t>(wait_ns));
    tokens = 0.0;
  }
  tokens_ = tokens;
  bucket_time_ = depart;
  return depart;
}

Verdict LinkQueue::offer(std::span<const std::byte> packet, Clock::time_point now) {
  stats_.offered += 1;
  // The loss draw happens for every packet, so the pattern depends only on the seed and count.
  const bool lose = uniform() < config_.loss;
  if (lose) {
    stats_.lost += 1;
    return Verdict::lost;
  }
  if (heap_.size() >= config_.queue_limit) {
    stats_.queue_full += 1;
    return Verdict::queue_full;
  }
  std::chrono::nanoseconds delay = config_.delay;
  if (config_.jitter.count() > 0) {
    const double offset = (2.0 * uniform() - 1.0) * static_cast<double>(config_.jitter.count());
    delay += std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(offset)));
    if (delay.count() < 0) delay = std::chrono::nanoseconds(0);
  }
  const Clock::time_point release = shaped_departure(packet.size(), now) + delay;

  std::uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  slots_[slot].assign(packet.begin(), packet.end());
  heap_.push_back(Entry{release, next_seq_++, slot});
  std::push_heap(heap_.begin(), heap_.end(), [](const Entry& a, const Entry& b) { return later(a, b); });
  return Verdict::queued;
}

std::optional<Clock::time_point> LinkQueue::next_release() const {
  if (heap_.empty()) return std::nullopt;
  return heap_.front().release;
}

LinkQueue::Entry LinkQueue::pop_front() {
  std::pop_heap(heap_.begin(), heap_.end(), [](const Entry& a, const Entry& b) { return later(a, b); });
  const Entry entry = heap_.back();
  heap_.pop_back();
  return entry;
}

}  // namespace poseidon::linkem
