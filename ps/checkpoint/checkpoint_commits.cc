#include "ps/checkpoint/checkpoint_commits.h"

#include <algorithm>

#include "ps/checkpoint/checkpoint_notice.h"

namespace poseidon::ps {

CheckpointCommits::CheckpointCommits(int servers, uint64_t start_clock)
    : committed_(start_clock),
      passed_by_all_(start_clock),
      passed_(static_cast<size_t>(servers), start_clock),
      pending_(static_cast<size_t>(servers)) {}

CheckpointCommits::Heard CheckpointCommits::onOutcome(int server, uint64_t low, uint32_t bits, bool written) {
  const size_t s = static_cast<size_t>(server);
  Heard heard;
  // A server tells of its clocks in ascending order, so the next one is after its last.
  heard.clock = widenAtLeast(passed_[s] + 1, low, bits);
  passed_[s] = heard.clock;
  if (written) {
    std::set<uint64_t>& mine = pending_[s];
    mine.insert(heard.clock);
    if (mine.size() > kMaxPending) mine.erase(mine.begin());
    // Only this clock can have become common: any other was common when its last file was told.
    const bool everywhere = std::all_of(pending_.begin(), pending_.end(),
                                        [&](const std::set<uint64_t>& other) { return other.contains(heard.clock); });
    if (everywhere) {
      committed_ = heard.clock;
      heard.committed = heard.clock;
    }
  }
  const uint64_t passed_by_all = *std::min_element(passed_.begin(), passed_.end());
  if (passed_by_all > passed_by_all_) {
    passed_by_all_ = passed_by_all;
    heard.passed_by_all = passed_by_all;
  }
  // Settled: committed, or passed by every server without being committed.
  const uint64_t settled = std::max(committed_, passed_by_all_);
  for (std::set<uint64_t>& clocks : pending_) clocks.erase(clocks.begin(), clocks.upper_bound(settled));
  return heard;
}

}  // namespace poseidon::ps
