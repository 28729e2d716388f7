// Waiting on a condition variable until a predicate holds or a Deadline passes, for objects whose
// callers block on state their receive threads update (SFB, the Adam worker, the PS client).
#pragma once

#include <condition_variable>
#include <mutex>

#include "common/deadline.h"

namespace poseidon {

// True once `done()` holds, false if the deadline passed first. Deadline::never() waits without a
// timeout: its time_point::max() is kept out of wait_until, where it may overflow.
template <typename Predicate>
bool waitWithDeadline(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Deadline deadline,
                      Predicate done) {
  if (!deadline.isNever()) return cv.wait_until(lock, deadline.at(), done);
  cv.wait(lock, done);
  return true;
}

}  // namespace poseidon
