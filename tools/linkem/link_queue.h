#pragma once
// One direction of an emulated link: loss, a token-bucket rate limit, delay and jitter.
// Pure logic: time is passed in, nothing here touches a file descriptor or a clock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace poseidon::linkem {

using Clock = std::chrono::steady_clock;

struct LinkConfig {
  std::chrono::nanoseconds delay{0};   // one-way delay added to every packet
  std::chrono::nanoseconds jitter{0};  // each packet's delay moves uniformly in [-jitter, +jitter]
                                       // (never below zero); only jitter can reorder packets
  double loss = 0.0;                   // probability that a packet is dropped, 0..1
  double rate_bytes_per_s = 0.0;       // token-bucket rate; 0 = unlimited
  std::size_t burst_bytes = 0;         // token-bucket depth (bytes sent back to back after idle)
  std::size_t queue_limit = 10000;     // packets held at once; an arrival beyond it is dropped
  std::uint64_t seed = 1;              // drives loss and jitter; same seed, same pattern
};

// Empty when `config` is usable, otherwise what is wrong with it (names the field and value).
std::string validate(const LinkConfig& config);

struct LinkStats {
  std::uint64_t offered = 0;
  std::uint64_t lost = 0;        // dropped by the loss draw
  std::uint64_t queue_full = 0;  // dropped because queue_limit packets were held
  std::uint64_t released = 0;
  std::uint64_t released_bytes = 0;
};

enum class Verdict { queued, lost, queue_full };

class LinkQueue {
 public:
  // Throws std::invalid_argument when validate(config) is not empty.
  explicit LinkQueue(const LinkConfig& config);

  // A packet arrives at `now` (calls must not go back in time). It is copied; the verdict says
  // whether it will come out.
  Verdict offer(std::span<const std::byte> packet, Clock::time_point now);

  // When the next held packet is due, or nothing when none is held.
  std::optional<Clock::time_point> next_release() const;

  // Hands every packet due at or before `now` to sink(std::span<const std::byte>), in order of
  // release time (arrival order among equal times). Returns how many were handed over.
  template <typename Sink>
  std::size_t release(Clock::time_point now, Sink&& sink) {
    std::size_t count = 0;
    while (!heap_.empty() && heap_.front().release <= now) {
      const Entry entry = pop_front();
      const std::vector<std::byte>& data = slots_[entry.slot];
      stats_.released += 1;
      stats_.released_bytes += data.size();
      sink(std::span<const std::byte>(data));
      free_slots_.push_back(entry.slot);
      ++count;
    }
    return count;
  }

  std::size_t size() const { return heap_.size(); }
  const LinkStats& stats() const { return stats_; }
  const LinkConfig& config() const { return config_; }

 private:
  struct Entry {
    Clock::time_point release;
    std::uint64_t seq;
    std::uint32_t slot;
  };

  double uniform();  // [0, 1)
  Clock::time_point shaped_departure(std::size_t bytes, Clock::time_point now);
  Entry pop_front();

  LinkConfig config_;
  std::mt19937_64 rng_;
  LinkStats stats_;
  std::uint64_t next_seq_ = 0;

  // Token bucket: `tokens_` bytes were available at `bucket_time_` (after the last departure).
  double tokens_ = 0.0;
  std::optional<Clock::time_point> bucket_time_;

  std::vector<Entry> heap_;                    // min-heap on (release, seq)
  std::vector<std::vector<std::byte>> slots_;  // packet buffers, reused
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace poseidon::linkem
