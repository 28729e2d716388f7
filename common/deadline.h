// Deadline: every blocking wait in Poseidon takes one, so nothing waits forever.
#pragma once

#include <chrono>

namespace poseidon {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  static Deadline after(std::chrono::nanoseconds timeout) { return Deadline(Clock::now() + timeout); }
  static Deadline never() { return Deadline(Clock::time_point::max()); }
  explicit Deadline(Clock::time_point at) : at_(at) {}

  Clock::time_point at() const { return at_; }
  bool expired() const { return Clock::now() >= at_; }
  bool isNever() const { return at_ == Clock::time_point::max(); }
  // Time left, clamped at zero.
  std::chrono::nanoseconds remaining() const {
    if (isNever()) return std::chrono::nanoseconds::max();
    auto left = at_ - Clock::now();
    return left.count() > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(left) : std::chrono::nanoseconds(0);
  }
  // Milliseconds left for poll()/epoll_wait(): -1 for never.
  int remainingMillisForPoll() const {
    if (isNever()) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(remaining()).count();
    return ms > 1000000 ? 1000000 : static_cast<int>(ms);
  }

 private:
  Clock::time_point at_;
};

}  // namespace poseidon
