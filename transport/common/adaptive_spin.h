// AdaptiveSpin: how long a waiting thread polls before it sleeps, learnt from how its recent
// spins went — so no option is needed for low latency, and a machine whose waits run long (or
// whose cores are all busy) stops spinning instead of taking a core from the other ranks.
//
// The rule (the idea of glibc's adaptive mutex): while at least half of the recent spins ended
// with the wait done, spin for twice the time those successful waits took (between cap/8 and
// the cap); otherwise do not spin, except for one wait in 16 that probes with a spin of the cap,
// so spinning comes back when waits get short again. Each spin round yields the core
// (sched_yield), so a runnable thread of another rank on this core goes first. Thread-safe
// without a lock (relaxed atomics: a stale estimate only costs a little latency).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace poseidon::transport {

class AdaptiveSpin {
 public:
  // `cap`: no wait spins longer than this.
  explicit AdaptiveSpin(std::chrono::nanoseconds cap = std::chrono::microseconds(50))
      : cap_ns_(cap.count()), success_ns_(cap.count() / 2) {}

  // How long the next wait should poll before sleeping.
  std::chrono::nanoseconds limit();
  // A spin of a positive limit ended: done within it after `took`, or not.
  void record(bool done, std::chrono::nanoseconds took);

  // Polls `done` (and yields) until it returns true, `give_up` does (a deadline, a shutdown: not
  // recorded, it says nothing about how long waits take) or the limit passes, and records how
  // the spin went. True when `done` did.
  template <typename Poll, typename GiveUp>
  bool spin(Poll&& done, GiveUp&& give_up);

 private:
  static constexpr int64_t kOne = 1024;  // fixed point of hit_rate_
  const int64_t cap_ns_;
  std::atomic<int64_t> success_ns_;      // moving average of waits done within their spin
  std::atomic<int64_t> hit_rate_{kOne};  // moving average of spins that ended done, x kOne
  std::atomic<uint32_t> waits_{0};
};

void yieldCore();

template <typename Poll, typename GiveUp>
bool AdaptiveSpin::spin(Poll&& done, GiveUp&& give_up) {
  const auto start = std::chrono::steady_clock::now();
  const auto spin_for = limit();
  if (spin_for.count() == 0) return done();
  const auto until = start + spin_for;
  while (true) {
    if (done()) {
      record(true, std::chrono::steady_clock::now() - start);
      return true;
    }
    if (give_up()) return false;
    if (std::chrono::steady_clock::now() >= until) {
      record(false, spin_for);
      return false;
    }
    yieldCore();
  }
}

}  // namespace poseidon::transport
