// What a worker makes of the servers' written checkpoints: the newest clock every server has,
// said once, from the low bits the immediates carry.
#include "ps/checkpoint/checkpoint_commits.h"

#include <gtest/gtest.h>

#include <optional>

#include "ps/imm_code.h"

namespace poseidon::testing {
namespace {

TEST(CheckpointCommits, TheNewestClockEveryServerWroteIsSaidOnce) {
  ps::CheckpointCommits commits(3, 0);
  EXPECT_EQ(commits.onWritten(0, 10), std::nullopt);
  EXPECT_EQ(commits.onWritten(1, 10), std::nullopt);
  EXPECT_EQ(commits.onWritten(0, 20), std::nullopt);
  EXPECT_EQ(commits.onWritten(2, 10), std::optional<uint64_t>(10));
  // Server 2 skipped 20; 30 is the next every server has.
  EXPECT_EQ(commits.onWritten(2, 30), std::nullopt);
  EXPECT_EQ(commits.onWritten(1, 20), std::nullopt);
  EXPECT_EQ(commits.onWritten(1, 30), std::nullopt);
  EXPECT_EQ(commits.onWritten(0, 30), std::optional<uint64_t>(30));
  EXPECT_EQ(commits.committed(), 30u);
}

TEST(CheckpointCommits, ClocksAreWidenedPastTheResumedOneAndTheWindow) {
  const uint64_t start = 3 * ps::kImmValueWindow + 100;  // resumed there
  ps::CheckpointCommits commits(2, start);
  const uint64_t next = start + ps::kImmValueWindow - 50;  // its low bits are below start's
  const auto low = static_cast<uint32_t>(next & ps::kImmValueMask);
  EXPECT_EQ(commits.onWritten(0, low), std::nullopt);
  EXPECT_EQ(commits.onWritten(1, low), std::optional<uint64_t>(next));
}

TEST(CheckpointCommits, ASingleServerCommitsEachFile) {
  ps::CheckpointCommits commits(1, 5);
  EXPECT_EQ(commits.onWritten(0, 6), std::optional<uint64_t>(6));
  EXPECT_EQ(commits.onWritten(0, 8), std::optional<uint64_t>(8));
}

}  // namespace
}  // namespace poseidon::testing
