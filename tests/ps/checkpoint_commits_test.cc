// What a worker makes of the servers' checkpoint outcomes: the newest clock every server has
// written (committed) and the newest every server has passed, each said once, from the low bits
// the immediates carry.
#include "ps/checkpoint/checkpoint_commits.h"

#include <gtest/gtest.h>

#include <optional>

#include "ps/checkpoint/checkpoint_notice.h"

namespace poseidon::testing {
namespace {

constexpr uint32_t kOutcomeBits = ps::noticeClockBits(ps::kOutcomeCodeBits);
constexpr bool kWritten = true;
constexpr bool kSkipped = false;

using Heard = ps::CheckpointCommits::Heard;

TEST(CheckpointCommits, WhatEveryServerWroteIsCommittedAndWhatAllPassedIsSaidOnce) {
  ps::CheckpointCommits commits(3, 0);
  auto heard = [&](int server, uint64_t clock) { return commits.onOutcome(server, clock, kOutcomeBits, kWritten); };
  EXPECT_EQ(heard(0, 10).committed, std::nullopt);
  EXPECT_EQ(heard(1, 10).committed, std::nullopt);
  EXPECT_EQ(heard(0, 20).passed_by_all, std::nullopt);
  const Heard third = heard(2, 10);
  EXPECT_EQ(third.committed, std::optional<uint64_t>(10));
  EXPECT_EQ(third.passed_by_all, std::optional<uint64_t>(10));
  // Server 2 went on to 30 without 20: once server 1 passed 20 too, 20 is passed by all, not committed.
  EXPECT_EQ(heard(2, 30).passed_by_all, std::nullopt);
  const Heard twenty = heard(1, 20);
  EXPECT_EQ(twenty.committed, std::nullopt);
  EXPECT_EQ(twenty.passed_by_all, std::optional<uint64_t>(20));
  EXPECT_EQ(heard(1, 30).committed, std::nullopt);
  const Heard thirty = heard(0, 30);
  EXPECT_EQ(thirty.committed, std::optional<uint64_t>(30));
  EXPECT_EQ(thirty.passed_by_all, std::optional<uint64_t>(30));
  EXPECT_EQ(commits.committed(), 30u);
}

TEST(CheckpointCommits, SkippedAndFailedClocksArePassedNotWritten) {
  ps::CheckpointCommits commits(2, 0);
  EXPECT_EQ(commits.onOutcome(0, 10, kOutcomeBits, kWritten).committed, std::nullopt);
  const Heard skipped = commits.onOutcome(1, 10, kOutcomeBits, kSkipped);
  EXPECT_EQ(skipped.clock, 10u);
  EXPECT_EQ(skipped.committed, std::nullopt);
  EXPECT_EQ(skipped.passed_by_all, std::optional<uint64_t>(10));
  EXPECT_EQ(commits.onOutcome(1, 20, kOutcomeBits, kWritten).committed, std::nullopt);
  EXPECT_EQ(commits.onOutcome(0, 20, kOutcomeBits, kWritten).committed, std::optional<uint64_t>(20));
  EXPECT_EQ(commits.committed(), 20u);
  EXPECT_EQ(commits.passedByAll(), 20u);
}

TEST(CheckpointCommits, ClocksAreWidenedPastTheResumedOneAndTheWindow) {
  const uint64_t start = 3 * (uint64_t{1} << kOutcomeBits) + 100;  // resumed there
  ps::CheckpointCommits commits(2, start);
  const uint64_t next = start + (uint64_t{1} << kOutcomeBits) - 50;  // its low bits are below start's
  const uint64_t low = next & ((uint64_t{1} << kOutcomeBits) - 1);
  EXPECT_EQ(commits.onOutcome(0, low, kOutcomeBits, kWritten).clock, next);
  EXPECT_EQ(commits.onOutcome(1, low, kOutcomeBits, kWritten).committed, std::optional<uint64_t>(next));
}

TEST(CheckpointCommits, ASingleServerCommitsEachFile) {
  ps::CheckpointCommits commits(1, 5);
  EXPECT_EQ(commits.onOutcome(0, 6, kOutcomeBits, kWritten).committed, std::optional<uint64_t>(6));
  EXPECT_EQ(commits.onOutcome(0, 7, kOutcomeBits, kSkipped).committed, std::nullopt);
  EXPECT_EQ(commits.onOutcome(0, 8, kOutcomeBits, kWritten).committed, std::optional<uint64_t>(8));
}

TEST(CheckpointNotice, ClockBitsBesideTheCodeRoundTrip) {
  const uint64_t clock = (uint64_t{1} << 27) + (uint64_t{5} << 15) + 1234;
  const uint32_t imm = ps::encodeCheckpointNotice(6, 4, ps::kOutcomeCodeBits, clock);
  const ps::CheckpointNotice notice = ps::decodeCheckpointNotice(ps::decodeImm(imm), ps::kOutcomeCodeBits);
  EXPECT_EQ(ps::decodeImm(imm).type, 6);
  EXPECT_EQ(notice.code, 4u);
  EXPECT_EQ(notice.clock_low, clock & ((uint64_t{1} << kOutcomeBits) - 1));
  uint64_t widened = 0;
  ASSERT_TRUE(ps::widenAtMost(clock + 7, notice.clock_low, kOutcomeBits, widened));
  EXPECT_EQ(widened, clock);
  EXPECT_FALSE(ps::widenAtMost(3, 5, kOutcomeBits, widened));
}

}  // namespace
}  // namespace poseidon::testing
