// The order in which poseidon-ps-bench issues one iteration's requests.
//
// push-then-pull (default): push every layer, then pull every layer. Each pull request is an
// immediate on the same ordered connection as the pushes, so the server learns of a worker's
// first pull only after that worker's last push to it has arrived.
// interleaved: push(l), pull(l) for each layer in turn, as a WFBP trainer does when backprop hands
// it one layer after another.
// A window of N lets at most N layers' pushes be unacknowledged at once (under BSP a push is
// acknowledged once every worker's push of the chunk was applied), so fast workers cannot run
// far ahead of slow ones; 0: no limit.
#pragma once

#include <cstddef>
#include <string>

#include "common/deadline.h"
#include "ps/client.h"

namespace poseidon::tools {

struct BenchSchedule {
  enum class Order { kPushThenPull, kInterleaved };
  Order order = Order::kPushThenPull;
  size_t window = 0;

  // "push-then-pull, no window" / "interleaved, window 2 layers"
  std::string describe() const;
};

inline constexpr const char* kPushThenPull = "push-then-pull";
inline constexpr const char* kInterleaved = "interleaved";
const char* orderName(BenchSchedule::Order order);

// One iteration: pushes every layer (when `push`; else only pulls) and pulls every layer in the
// schedule's order, then waits for all of it. Returns when the last push was acknowledged.
Result<Clock::time_point> exchange(ps::Client& client, const BenchSchedule& schedule, bool push, Deadline deadline);

}  // namespace poseidon::tools
