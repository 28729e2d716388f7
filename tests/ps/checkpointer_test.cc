// The checkpointer in front of a disk slower than the checkpoints come: what is due while
// kMaxSnapshotsAwaitingDisk snapshots wait for the disk is skipped and said (once for all skipped
// since last said), so memory stays bounded; the first one due after the disk catches up is taken.
// And its files: none newer than the clock every server has written goes, at most `keep` of them
// wait, and the older ones go once a newer clock is committed.
#include "ps/checkpoint/checkpointer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ps/checkpoint/checkpoint_notice.h"
#include "tests/ps/held_disk.h"
#include "tests/support/mesh.h"

namespace poseidon::testing {
namespace {

constexpr uint32_t kChunks = 2;
constexpr uint64_t kChunkFloats = 16;
constexpr uint32_t kSettledBits = ps::noticeClockBits(ps::kSettledCodeBits);

struct Miss {
  uint64_t clock;
  ps::CheckpointMiss why;
  std::string message;
};

// A server of two chunks and what its checkpointer told it.
class Checkpointer : public ::testing::Test {
 protected:
  Checkpointer() {
    for (uint32_t c = 0; c < kChunks; ++c) {
      shard.chunks.push_back(
          {c, c * kChunkFloats * sizeof(float), c * kChunkFloats * sizeof(float), kChunkFloats * sizeof(float)});
    }
    shard.bytes = kChunks * kChunkFloats * sizeof(float);
    identity.chunks = kChunks;
    identity.elements = kChunks * kChunkFloats;
  }

  // Hooks that record what is told; `write` as given.
  ps::CheckpointerHooks recording(ps::WriteCheckpointFunction write = {}) {
    ps::CheckpointerHooks hooks;
    hooks.on_written = [this](uint64_t clock) {
      std::lock_guard lock(mutex);
      told_written.push_back(clock);
    };
    hooks.on_miss = [this](uint64_t clock, ps::CheckpointMiss why, const Status& status) {
      std::lock_guard lock(mutex);
      misses.push_back({clock, why, status.message()});
    };
    hooks.write = std::move(write);
    return hooks;
  }

  void start(int keep, uint64_t start_clock, ps::CheckpointerHooks hooks) {
    checkpointer = std::make_unique<ps::Checkpointer>(dir.path(), identity, shard, /*every=*/1, keep, start_clock,
                                                      std::move(hooks));
  }

  // Every chunk reaches `version`.
  void reach(uint64_t version) {
    for (uint32_t c = 0; c < kChunks; ++c) {
      checkpointer->onVersion(c, version, version, applied, params.data(), nullptr, nullptr);
    }
  }

  std::vector<uint64_t> files() const { return ps::listCheckpoints(dir.path(), identity.server); }

  std::vector<Miss> missesSoFar() {
    std::lock_guard lock(mutex);
    return misses;
  }

  std::vector<uint64_t> toldWritten() {
    std::lock_guard lock(mutex);
    return told_written;
  }

  TempDir dir;
  ps::Shard shard;
  ps::CheckpointIdentity identity;
  std::vector<float> params = std::vector<float>(kChunkFloats, 1.0f);
  std::vector<uint64_t> applied = std::vector<uint64_t>(1, 0);  // identity.workers
  std::mutex mutex;
  std::vector<uint64_t> told_written;
  std::vector<Miss> misses;
  std::unique_ptr<ps::Checkpointer> checkpointer;
};

TEST_F(Checkpointer, WhatFallsDueWhileTheDiskIsBehindIsSkippedAndSaidOnce) {
  HeldDisk disk;
  start(/*keep=*/100, /*start_clock=*/0, recording(disk.writer()));
  // Clock 1 goes to the disk, 2 waits for it: that is kMaxSnapshotsAwaitingDisk. 3 to 6 find the
  // disk behind.
  static_assert(ps::kMaxSnapshotsAwaitingDisk == 2);
  for (uint64_t version = 1; version <= 6; ++version) reach(version);
  disk.open();
  ASSERT_TRUE(checkpointer->flush().isOk());
  EXPECT_EQ(disk.written(), (std::vector<uint64_t>{1, 2}));
  std::vector<Miss> said = missesSoFar();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].clock, 6u);
  EXPECT_EQ(said[0].why, ps::CheckpointMiss::kSkippedBehind);
  EXPECT_NE(said[0].message.find("4 checkpoint(s) skipped, the newest at clock 6"), std::string::npos)
      << said[0].message;
  // Caught up: the next one due is taken.
  reach(7);
  ASSERT_TRUE(checkpointer->flush().isOk());
  EXPECT_EQ(disk.written(), (std::vector<uint64_t>{1, 2, 7}));
  EXPECT_EQ(missesSoFar().size(), 1u);
}

// Async, a lost worker left out: chunk 1 jumps from clock 1 past 2 and 3 to 4 while chunk 0 has
// begun the snapshot of 2. Clocks 2 and 3 hold no state of their own: both are skipped and said
// as passed over, chunk 0's later arrival at 3 only counts down, and 4 is taken. Before, the
// snapshot of 2 waited for chunk 1 for good, holding its copy and one of the `keep` places (with
// keep 1, every later checkpoint was skipped).
TEST_F(Checkpointer, ClocksAChunkJumpsOverAreSkippedAndTheNextIsTaken) {
  start(/*keep=*/100, /*start_clock=*/0, recording());
  reach(1);
  ASSERT_TRUE(checkpointer->flush().isOk());
  checkpointer->onVersion(0, 2, 2, applied, params.data(), nullptr, nullptr);
  checkpointer->onPassedOver(2, 4);
  checkpointer->onVersion(1, 4, 4, applied, params.data(), nullptr, nullptr);
  checkpointer->onVersion(0, 3, 3, applied, params.data(), nullptr, nullptr);
  checkpointer->onVersion(0, 4, 4, applied, params.data(), nullptr, nullptr);
  ASSERT_TRUE(checkpointer->flush().isOk());
  EXPECT_EQ(toldWritten(), (std::vector<uint64_t>{1, 4}));
  // Said once for both, or for 2 and then for 3, as the writer thread wakes.
  const std::vector<Miss> said = missesSoFar();
  ASSERT_GE(said.size(), 1u);
  ASSERT_LE(said.size(), 2u);
  EXPECT_EQ(said.back().clock, 3u);
  if (said.size() == 2) {
    EXPECT_EQ(said.front().clock, 2u);
  }
  for (const Miss& miss : said) {
    EXPECT_EQ(miss.why, ps::CheckpointMiss::kPassedOver);
    EXPECT_NE(miss.message.find("passed over when a lost worker was left out"), std::string::npos) << miss.message;
  }
  EXPECT_NE(said.back().message.find(fmt::format("{} checkpoint(s) skipped, the newest at clock 3", 3 - said.size())),
            std::string::npos)
      << said.back().message;
}

TEST_F(Checkpointer, FilesNotEveryServerHasPassedStayAndAtMostKeepOfThemWait) {
  start(/*keep=*/2, /*start_clock=*/0, recording());
  // One clock at a time, each written (or its skip said) before the next falls due.
  auto step = [&](uint64_t version) {
    reach(version);
    ASSERT_TRUE(checkpointer->flush().isOk());
  };

  // Nothing committed: 1 and 2 wait for the other servers, so 3 and 4 are skipped, each said.
  for (uint64_t version = 1; version <= 4; ++version) step(version);
  EXPECT_EQ(files(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(toldWritten(), (std::vector<uint64_t>{1, 2}));
  std::vector<Miss> said = missesSoFar();
  ASSERT_EQ(said.size(), 2u);
  EXPECT_EQ(said[0].clock, 3u);
  EXPECT_EQ(said[0].why, ps::CheckpointMiss::kSkippedAwaiting);
  EXPECT_NE(said[0].message.find("1 checkpoint(s) skipped, the newest at clock 3: 1 while 2 files newer than clock 0"),
            std::string::npos)
      << said[0].message;
  EXPECT_EQ(said[1].clock, 4u);

  // Every server has 1: 2 alone waits, so 5 is taken; 6 is not.
  EXPECT_TRUE(checkpointer->commit(1, kSettledBits));
  step(5);
  step(6);
  EXPECT_EQ(files(), (std::vector<uint64_t>{1, 2, 5}));

  // Every server has 5: 1 is older than the newest 2 up to it; 7 and 8 are taken.
  EXPECT_TRUE(checkpointer->commit(5, kSettledBits));
  ASSERT_TRUE(checkpointer->flush().isOk());
  EXPECT_EQ(files(), (std::vector<uint64_t>{2, 5}));
  step(7);
  step(8);
  EXPECT_EQ(files(), (std::vector<uint64_t>{2, 5, 7, 8}));

  // Every server passed 7 and some skipped it: it goes, 8 waits, 9 is taken.
  EXPECT_TRUE(checkpointer->passedByAll(7, kSettledBits));
  step(9);
  EXPECT_EQ(files(), (std::vector<uint64_t>{2, 5, 8, 9}));

  // Words it cannot place change nothing: an older commit, clocks it has no file of.
  EXPECT_FALSE(checkpointer->commit(2, kSettledBits));
  EXPECT_FALSE(checkpointer->commit(7, kSettledBits));
  EXPECT_FALSE(checkpointer->commit(10, kSettledBits));
  EXPECT_EQ(checkpointer->committed(), 5u);
  EXPECT_TRUE(checkpointer->commit(9, kSettledBits));
  ASSERT_TRUE(checkpointer->flush().isOk());
  EXPECT_EQ(files(), (std::vector<uint64_t>{8, 9}));
  EXPECT_EQ(toldWritten(), (std::vector<uint64_t>{1, 2, 5, 7, 8, 9}));
  EXPECT_EQ(missesSoFar().size(), 3u);  // 3, 4, then 6
}

// Low bits that match two undecided files name neither: both stay.
TEST_F(Checkpointer, ACommitMatchingTwoFilesIsRefused) {
  start(/*keep=*/4, /*start_clock=*/0, recording());
  for (uint64_t version = 1; version <= 3; ++version) {
    reach(version);
    ASSERT_TRUE(checkpointer->flush().isOk());
  }
  EXPECT_FALSE(checkpointer->commit(1, /*bits=*/1));  // 1 and 3
  EXPECT_EQ(checkpointer->committed(), 0u);
  EXPECT_TRUE(checkpointer->commit(2, /*bits=*/2));
  ASSERT_TRUE(checkpointer->flush().isOk());
  EXPECT_EQ(files(), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(checkpointer->committed(), 2u);
}

// A disk that writes each file only when let, and says how many writes it has begun.
class SteppedDisk {
 public:
  ps::WriteCheckpointFunction writer() {
    return [this](const std::string&, const ps::CheckpointIdentity&, const ps::CheckpointData&) {
      std::unique_lock lock(mutex_);
      ++begun_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return permits_ > 0; });
      --permits_;
      return Status::ok();
    };
  }
  void letOneWrite() {
    std::lock_guard lock(mutex_);
    ++permits_;
    cv_.notify_all();
  }
  void waitUntilBegun(int writes) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return begun_ >= writes; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int permits_ = 0;
  int begun_ = 0;
};

// The workers read each outcome as "this server has passed that clock", so they are told in clock
// order even when a skip comes while an older snapshot still waits for the disk.
TEST_F(Checkpointer, OutcomesAreToldInClockOrder) {
  SteppedDisk disk;
  std::vector<uint64_t> order;  // under `mutex`
  ps::CheckpointerHooks hooks;
  hooks.on_written = [&](uint64_t clock) {
    std::lock_guard lock(mutex);
    order.push_back(clock);
  };
  hooks.on_miss = [&](uint64_t clock, ps::CheckpointMiss, const Status&) {
    std::lock_guard lock(mutex);
    order.push_back(clock);
  };
  hooks.write = disk.writer();
  start(/*keep=*/100, /*start_clock=*/0, hooks);
  reach(1);  // being written
  disk.waitUntilBegun(1);
  reach(2);  // waits for the disk
  reach(3);  // skipped: two wait
  disk.letOneWrite();
  disk.waitUntilBegun(2);  // 2 is being written
  reach(4);                // waits for the disk
  reach(5);                // skipped
  for (int i = 0; i < 2; ++i) disk.letOneWrite();
  ASSERT_TRUE(checkpointer->flush().isOk());
  std::lock_guard lock(mutex);
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

// A resumed job's clock is on every disk: it counts as committed from the start; the files up to
// it beyond `keep` go at once, and the later ones (another future) with them.
TEST_F(Checkpointer, TheResumedClockIsCommittedFromTheStart) {
  std::vector<float> shard_params(identity.elements, 1.0f);
  ps::CheckpointData data;
  data.chunk_steps.assign(kChunks, 0);
  data.applied.assign(kChunks * identity.workers, 0);
  data.params = shard_params;
  for (const uint64_t clock : {3, 6, 9, 12}) {
    data.clock = clock;
    ASSERT_TRUE(ps::writeCheckpoint(dir.path(), identity, data).isOk());
  }
  start(/*keep=*/1, /*start_clock=*/9, recording());
  ASSERT_TRUE(checkpointer->flush().isOk());
  EXPECT_EQ(files(), (std::vector<uint64_t>{9}));
  reach(10);
  ASSERT_TRUE(checkpointer->flush().isOk());
  EXPECT_EQ(files(), (std::vector<uint64_t>{9, 10}));
  EXPECT_EQ(toldWritten(), (std::vector<uint64_t>{10}));
}

}  // namespace
}  // namespace poseidon::testing
