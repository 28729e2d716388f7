// Checkpointer: takes a server's checkpoints without stopping it.
//
// A checkpoint of clock T is due periodically (T a multiple of `every`) or on request. Each chunk
// is copied into the checkpoint's snapshot the moment it reaches version T (under that chunk's
// lock, before the next update can touch it), so the snapshot is exactly the state at T even
// though chunks move on independently; when the last chunk has arrived a background thread
// writes the file (ps/checkpoint.h: temporary file, fsync, rename). Nothing here blocks an update
// thread on another chunk or on the disk: each checkpoint in progress has its own snapshot.
//
// A disk slower than the checkpoints come would otherwise queue a shard-sized snapshot per
// checkpoint without end: a checkpoint that falls due while kMaxSnapshotsAwaitingDisk are written
// or waiting to be is skipped (no snapshot is taken) and said, so memory stays bounded and the
// next one due after the disk catches up is taken.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "ps/checkpoint/checkpoint.h"
#include "ps/shard.h"

namespace poseidon::ps {

// Why a checkpoint that fell due has no file.
enum class CheckpointMiss {
  kWriteFailed,   // writing the file failed
  kSkippedBehind  // skipped: the disk had not finished the ones before it
};

// Snapshots held for the disk at most (the one being written and those complete and waiting).
inline constexpr size_t kMaxSnapshotsAwaitingDisk = 2;

class Checkpointer {
 public:
  // `on_miss` (the writer thread, may be empty) hears of each checkpoint that fell due and has no
  // file, with the reason, so the workers can be told: each failed write, and the newest of the
  // checkpoints skipped since it last heard. `write` writes the files (empty: writeCheckpoint).
  Checkpointer(std::string dir, CheckpointIdentity identity, const Shard& shard, uint64_t every, int keep,
               uint64_t start_clock, std::function<void(uint64_t clock, CheckpointMiss, const Status&)> on_miss = {},
               WriteCheckpointFunction write = {});
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Asks for a checkpoint at `clock`, or at the first clock no chunk has reached yet if later.
  void request(uint64_t clock);

  // Called with local chunk `chunk`'s lock held each time it reaches `version`.
  void onVersion(uint32_t chunk, uint64_t version, uint64_t steps, std::span<const uint64_t> applied,
                 const float* params, const float* state0, const float* state1);

  // Waits until every complete snapshot is on disk; returns the first write failure.
  Status flush();
  // The clock of the newest checkpoint written (0: none yet).
  uint64_t lastWritten() const;

 private:
  struct Snapshot {
    uint64_t clock = 0;
    uint32_t missing = 0;
    bool skipped = false;  // no data: the chunks only count down to drop the entry
    std::vector<float> params, state0, state1;
    std::vector<uint64_t> steps, applied;
  };

  bool dueLocked(uint64_t version) const;
  void writerLoop();

  const std::function<void(uint64_t clock, CheckpointMiss, const Status&)> on_miss_;
  const WriteCheckpointFunction write_;
  const std::string dir_;
  const CheckpointIdentity identity_;
  const Shard& shard_;
  const uint64_t every_;
  const int keep_;
  const uint64_t start_clock_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t highest_version_ = 0;
  std::set<uint64_t> requested_;
  std::map<uint64_t, std::unique_ptr<Snapshot>> collecting_;
  std::deque<std::unique_ptr<Snapshot>> complete_;
  std::vector<uint64_t> skipped_;  // skipped clocks the writer thread has not yet reported
  bool writing_ = false;
  bool stopping_ = false;
  Status first_error_;
  uint64_t last_written_ = 0;
  std::thread writer_;
};

}  // namespace poseidon::ps
