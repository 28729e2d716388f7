// The checkpointer in front of a disk slower than the checkpoints come: what is due while
// kMaxSnapshotsAwaitingDisk snapshots wait for the disk is skipped and said (once for all skipped
// since last said), so memory stays bounded; the first one due after the disk catches up is taken.
#include "ps/checkpoint/checkpointer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "tests/ps/held_disk.h"
#include "tests/support/mesh.h"

namespace poseidon::testing {
namespace {

constexpr uint32_t kChunks = 2;
constexpr uint64_t kChunkFloats = 16;

struct Miss {
  uint64_t clock;
  ps::CheckpointMiss why;
  std::string message;
};

ps::Shard twoChunks() {
  ps::Shard shard;
  for (uint32_t c = 0; c < kChunks; ++c) {
    shard.chunks.push_back(
        {c, c * kChunkFloats * sizeof(float), c * kChunkFloats * sizeof(float), kChunkFloats * sizeof(float)});
  }
  shard.bytes = kChunks * kChunkFloats * sizeof(float);
  return shard;
}

TEST(Checkpointer, WhatFallsDueWhileTheDiskIsBehindIsSkippedAndSaidOnce) {
  TempDir dir;
  const ps::Shard shard = twoChunks();
  ps::CheckpointIdentity identity;
  identity.chunks = kChunks;
  identity.elements = kChunks * kChunkFloats;
  HeldDisk disk;
  std::mutex misses_mutex;
  std::vector<Miss> misses;
  auto on_miss = [&](uint64_t clock, ps::CheckpointMiss why, const Status& status) {
    std::lock_guard lock(misses_mutex);
    misses.push_back({clock, why, status.message()});
  };
  ps::Checkpointer checkpointer(dir.path(), identity, shard, /*every=*/1, /*keep=*/100, /*start_clock=*/0, on_miss,
                                disk.writer());
  std::vector<float> params(kChunkFloats, 1.0f);
  const std::vector<uint64_t> applied(identity.workers, 0);
  auto reach = [&](uint64_t version) {
    for (uint32_t c = 0; c < kChunks; ++c) {
      checkpointer.onVersion(c, version, version, applied, params.data(), nullptr, nullptr);
    }
  };
  // Clock 1 goes to the disk, 2 waits for it: that is kMaxSnapshotsAwaitingDisk. 3 to 6 find the
  // disk behind.
  static_assert(ps::kMaxSnapshotsAwaitingDisk == 2);
  for (uint64_t version = 1; version <= 6; ++version) reach(version);
  disk.open();
  ASSERT_TRUE(checkpointer.flush().isOk());
  EXPECT_EQ(disk.written(), (std::vector<uint64_t>{1, 2}));
  {
    std::lock_guard lock(misses_mutex);
    ASSERT_EQ(misses.size(), 1u);
    EXPECT_EQ(misses[0].clock, 6u);
    EXPECT_EQ(misses[0].why, ps::CheckpointMiss::kSkippedBehind);
    EXPECT_NE(misses[0].message.find("4 checkpoint(s) skipped, the newest at clock 6"), std::string::npos)
        << misses[0].message;
  }
  // Caught up: the next one due is taken.
  reach(7);
  ASSERT_TRUE(checkpointer.flush().isOk());
  EXPECT_EQ(disk.written(), (std::vector<uint64_t>{1, 2, 7}));
  std::lock_guard lock(misses_mutex);
  EXPECT_EQ(misses.size(), 1u);
}

}  // namespace
}  // namespace poseidon::testing
