// SendBudget: the bandwidth manager's meter ([Poseidon 2015] section 4.3.3, from Bösen): a budget
// of bytes per second that every send of a device draws from, so a host stays within the share of
// a link it was given and other traffic keeps the rest. Which bytes go first within the budget is
// the schedulers' choice above (the PS client's priority window): the budget only says how many
// may go now.
//
// A token bucket of `burst` bytes (what may leave at once after an idle spell) filling at the
// rate, kept as one number, the time at which it was (or will be) empty, tokens accruing from
// there (the generic cell rate algorithm), so it is one atomic word updated by compare-and-swap: shared by the streams
// of every pair of a device, and, placed in shared memory (shared()), by the devices of several processes on one host,
// say a worker and its colocated PS server. Every byte handed to the kernel is taken first, headers and control frames
// included, since they use the link too.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/deadline.h"
#include "common/status.h"

namespace poseidon::transport {

class SendBudget {
 public:
  // `bytes_per_second` > 0. The bucket starts full at `now`. This process's alone.
  SendBudget(uint64_t bytes_per_second, uint64_t burst_bytes, Clock::time_point now = Clock::now());
  ~SendBudget();
  SendBudget(const SendBudget&) = delete;
  SendBudget& operator=(const SendBudget&) = delete;

  // The budget of every process on this host that opens the same `name` (letters, digits, '-',
  // '_', '.'; at most 200): a shared-memory object /dev/shm/poseidon-budget-<name>, made by the
  // first and removed by the last to close it. All must give the same rate and burst; a process
  // giving others fails naming both. A file there that is no budget of ours (another size or
  // content, not a regular file of this user, a symbolic link) is refused, never written. A
  // process killed while holding a share leaves the file (and counts as a user forever): use
  // names of one job.
  static Result<std::unique_ptr<SendBudget>> shared(const std::string& name, uint64_t bytes_per_second,
                                                    uint64_t burst_bytes);

  // A device's budget: none (nullptr) at 0 bytes per second, else the rate with defaultBurst, this
  // process's own when `share` is empty, else shared(share, ...).
  static Result<std::unique_ptr<SendBudget>> forDevice(uint64_t bytes_per_second, const std::string& share);

  // The burst a device uses for a rate: 5 ms of it, at least 64 KiB (a few frames), so the meter
  // neither stalls a stream on a fraction of a frame nor lets a long burst past a shaper.
  static uint64_t defaultBurst(uint64_t bytes_per_second);

  // Takes up to `want` bytes now; returns how many were granted: 0 while fewer than
  // min(want, at_least, burst) are there, so a sender waits for a useful amount instead of
  // spinning on the few bytes that accrue between two calls.
  uint64_t take(uint64_t want, uint64_t at_least = 1, Clock::time_point now = Clock::now());
  // Returns bytes granted but not sent (the socket took fewer).
  void giveBack(uint64_t bytes);
  // How long from `now` until `bytes` (capped at the burst) are available.
  std::chrono::nanoseconds timeUntil(uint64_t bytes, Clock::time_point now = Clock::now()) const;

  uint64_t bytesPerSecond() const { return rate_; }
  uint64_t burstBytes() const { return burst_; }

  struct SharedState;  // the shared-memory layout (send_budget.cc)

 private:
  SendBudget(uint64_t bytes_per_second, uint64_t burst_bytes, std::atomic<int64_t>* empty_at);
  int64_t nanosFor(uint64_t bytes) const;
  uint64_t bytesIn(int64_t nanos) const;

  const uint64_t rate_;
  const uint64_t burst_;
  const int64_t burst_nanos_;
  // Clock::time_point nanoseconds since its epoch at which the bucket is empty: bytes available at
  // t are (t - empty_at) at the rate, capped at the burst. Our own word, or one in shared memory
  // (steady_clock is CLOCK_MONOTONIC, the same in every process of the host).
  std::atomic<int64_t> own_empty_at_{0};
  std::atomic<int64_t>* empty_at_;
  SharedState* shared_ = nullptr;  // mapped, when shared
  std::string shared_path_;
};

}  // namespace poseidon::transport
