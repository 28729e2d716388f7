// SendBudget: the bandwidth manager's meter ([Poseidon 2015] section 4.3.3, from Bösen): a token
// bucket of bytes per second that every send of a device draws from, so a process stays within
// the share of a link it was given and other traffic keeps the rest. Which bytes go first within
// the budget is the schedulers' choice above (the PS client's priority window): the budget only
// says how many may go now.
//
// Tokens accrue at the rate up to `burst` (what may leave at once after an idle spell); every
// byte handed to the kernel is taken first, headers and control frames included, since they use
// the link too. Thread-safe: the streams of every pair of the device share one budget.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

#include "common/deadline.h"

namespace poseidon::transport {

class SendBudget {
 public:
  // `bytes_per_second` > 0. The bucket starts full at `now`.
  SendBudget(uint64_t bytes_per_second, uint64_t burst_bytes, Clock::time_point now = Clock::now());

  // The burst a device uses for a rate: 5 ms of it, at least 64 KiB (a few frames), so the meter
  // neither stalls a stream on a fraction of a frame nor lets a long burst past a shaper.
  static uint64_t defaultBurst(uint64_t bytes_per_second);

  // Takes up to `want` bytes now; returns how many were granted: 0 while fewer than
  // min(want, at_least) are there, so a sender waits for a useful amount instead of spinning on
  // the few bytes that accrue between two calls.
  uint64_t take(uint64_t want, uint64_t at_least = 1, Clock::time_point now = Clock::now());
  // Returns bytes granted but not sent (the socket took fewer).
  void giveBack(uint64_t bytes);
  // How long from `now` until `bytes` (capped at the burst) are available.
  std::chrono::nanoseconds timeUntil(uint64_t bytes, Clock::time_point now = Clock::now()) const;

  uint64_t bytesPerSecond() const { return rate_; }
  uint64_t burstBytes() const { return burst_; }

 private:
  void refillLocked(Clock::time_point now);

  const uint64_t rate_;
  const uint64_t burst_;
  mutable std::mutex mutex_;
  double tokens_;  // bytes; fractional so slow rates accrue exactly
  Clock::time_point last_;
};

}  // namespace poseidon::transport
