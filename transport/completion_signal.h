// CompletionSignal: lets one thread wait for whichever of many requests completes first.
//
// A Request completes a waiter of its own; a thread that owns several (a driver with syncs of
// many layers queued, the pipeline collecting syncs as they finish) would otherwise wait on the
// oldest and notice a younger one only when that is done. Each request given the signal
// (Request::signalOnCompletion) bumps its generation when it completes; the owner reads the
// generation, looks at its requests, and if none is done waits for the generation to move on.
// Reading before looking is what makes it race-free: a completion after the look moves the
// generation the owner waits on. Other events the owner waits for (new work, stop) notify it too.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "common/deadline.h"
#include "common/deadline_wait.h"

namespace poseidon::transport {

class CompletionSignal {
 public:
  uint64_t generation() const {
    std::lock_guard lock(mutex_);
    return generation_;
  }

  void notify() {
    {
      std::lock_guard lock(mutex_);
      ++generation_;
    }
    changed_.notify_all();
  }

  // True once the generation differs from `seen`, false when the deadline passed first.
  bool waitPast(uint64_t seen, Deadline deadline) const {
    std::unique_lock lock(mutex_);
    return waitWithDeadline(changed_, lock, deadline, [&] { return generation_ != seen; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  uint64_t generation_ = 0;
};

}  // namespace poseidon::transport
