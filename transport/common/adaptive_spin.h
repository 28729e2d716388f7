// AdaptiveSpin: how long a waiting thread polls before it sleeps, learnt from how long waits
// took lately — so no option is needed for low latency, and a machine whose waits are long (or
// whose cores are all busy) stops spinning instead of taking a core from the other ranks.
//
// The rule (the same idea as glibc's adaptive mutex): keep a moving average of how long waits
// took; spin for twice that while it stays under the cap, otherwise not at all, except for one
// wait in 16 that probes with a short spin so the average can come down again. Each spin round
// yields the core (sched_yield), so a runnable thread of another rank on this core goes first.
// Thread-safe without a lock (relaxed atomics: a stale estimate only costs a little latency).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace poseidon::transport {

class AdaptiveSpin {
 public:
  // `cap`: no wait spins longer than this.
  explicit AdaptiveSpin(std::chrono::nanoseconds cap = std::chrono::microseconds(50)) : cap_ns_(cap.count()) {}

  // How long the next wait should poll before sleeping.
  std::chrono::nanoseconds limit();
  // A wait ended after `took` (from its start to the completion, spinning or not).
  void record(std::chrono::nanoseconds took);

  // Polls `done` (and yields) until it returns true or the limit passes, and records the wait
  // (one that outlasts the spin counts as long). True when `done` did.
  template <typename Poll>
  bool spin(Poll&& done);

 private:
  const int64_t cap_ns_;
  std::atomic<int64_t> average_ns_{0};
  std::atomic<uint32_t> waits_{0};
};

void yieldCore();

template <typename Poll>
bool AdaptiveSpin::spin(Poll&& done) {
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + limit();
  while (true) {
    if (done()) {
      record(std::chrono::steady_clock::now() - start);
      return true;
    }
    if (std::chrono::steady_clock::now() >= until) {
      record(std::chrono::nanoseconds(4 * cap_ns_));
      return false;
    }
    yieldCore();
  }
}

}  // namespace poseidon::transport
