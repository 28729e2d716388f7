#include "ps/checkpoint/checkpoint_commits.h"

#include <algorithm>

#include "ps/imm_code.h"

namespace poseidon::ps {

CheckpointCommits::CheckpointCommits(int servers, uint64_t start_clock)
    : committed_(start_clock),
      newest_(static_cast<size_t>(servers), start_clock),
      pending_(static_cast<size_t>(servers)) {}

std::optional<uint64_t> CheckpointCommits::onWritten(int server, uint32_t low) {
  const size_t s = static_cast<size_t>(server);
  // A server's next file is newer than its last: exact while they are less than 32768 clocks apart.
  const uint64_t clock = widenAtLeast(newest_[s] + 1, low);
  newest_[s] = clock;
  std::set<uint64_t>& mine = pending_[s];
  mine.insert(clock);
  if (mine.size() > kMaxPending) mine.erase(mine.begin());
  // The newest clock in every server's set; it can only be newer than committed_ if it has `clock`.
  for (const std::set<uint64_t>& other : pending_) {
    if (!other.contains(clock)) return std::nullopt;
  }
  committed_ = clock;
  for (std::set<uint64_t>& other : pending_) other.erase(other.begin(), other.upper_bound(clock));
  return clock;
}

}  // namespace poseidon::ps
