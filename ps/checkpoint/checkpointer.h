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
//
// A job resumes from a clock every server has a file of (ps/checkpoint/resume.h), and servers skip
// different checkpoints (each its own disk), so no server prunes by its own files alone: it keeps
// every file newer than the newest clock every server has written (the committed clock, which the
// workers say once each server told them it wrote it: commit()) and the newest `keep` up to it.
// That committed file is then on every disk, whatever each server has heard so far. To bound its
// disk when the others never catch up (a failing disk), a server holding `keep` files or
// snapshots newer than the committed clock skips what falls due, and says so.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "ps/checkpoint/checkpoint.h"
#include "ps/shard.h"

namespace poseidon::ps {

// Why a checkpoint that fell due has no file.
enum class CheckpointMiss {
  kWriteFailed,      // writing the file failed
  kSkippedBehind,    // skipped: the disk had not finished the ones before it
  kSkippedAwaiting,  // skipped: `keep` newer ones wait for the other servers' files of their clock
};

// Snapshots held for the disk at most (the one being written and those complete and waiting).
inline constexpr size_t kMaxSnapshotsAwaitingDisk = 2;

// What a checkpointer tells its server, on its writer thread; any may be empty.
struct CheckpointerHooks {
  std::function<void(uint64_t clock)> on_written;  // the file of `clock` is complete
  // Each failed write, and the newest of the checkpoints skipped (per reason) since last said.
  std::function<void(uint64_t clock, CheckpointMiss, const Status&)> on_miss;
  WriteCheckpointFunction write;  // writes the files; empty: writeCheckpoint
};

class Checkpointer {
 public:
  // `keep` >= 1 (the server checks it). Files of `start_clock` and older (the resumed clock, which
  // every server has) count as committed.
  Checkpointer(std::string dir, CheckpointIdentity identity, const Shard& shard, uint64_t every, int keep,
               uint64_t start_clock, CheckpointerHooks hooks = {});
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Asks for a checkpoint at `clock`, or at the first clock no chunk has reached yet if later.
  void request(uint64_t clock);

  // Called with local chunk `chunk`'s lock held each time it reaches `version`.
  void onVersion(uint32_t chunk, uint64_t version, uint64_t steps, std::span<const uint64_t> applied,
                 const float* params, const float* state0, const float* state1);

  // Waits until every complete snapshot is on disk and told, every skip said, and the files the
  // committed clock let go are gone; returns the first write failure.
  Status flush();
  // The clock of the newest checkpoint written (0: none yet).
  uint64_t lastWritten() const;
  // Every server has written its checkpoint of `clock`: older files beyond `keep` may go. False
  // when this server wrote no checkpoint of `clock` in this run (a clock already known, or older,
  // is true and changes nothing).
  bool commit(uint64_t clock);

 private:
  struct Snapshot {
    uint64_t clock = 0;
    uint32_t missing = 0;
    bool skipped = false;  // no data: the chunks only count down to drop the entry
    CheckpointMiss skip_reason = CheckpointMiss::kSkippedBehind;
    std::vector<float> params, state0, state1;
    std::vector<uint64_t> steps, applied;
  };

  bool dueLocked(uint64_t version) const;
  // Why a checkpoint falling due now is skipped, or nothing.
  std::optional<CheckpointMiss> skipReasonLocked() const;
  void writerLoop();
  // Says the skipped checkpoints of one reason, once for all; the lock is released meanwhile.
  void reportSkippedLocked(std::unique_lock<std::mutex>& lock, std::vector<uint64_t>& clocks, CheckpointMiss why);
  void pruneLocked(std::unique_lock<std::mutex>& lock);

  const CheckpointerHooks hooks_;
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
  // Skipped clocks the writer thread has not yet reported, per reason.
  std::vector<uint64_t> skipped_behind_;
  std::vector<uint64_t> skipped_awaiting_;
  std::set<uint64_t> written_;  // clocks this run wrote, from the committed one on
  uint64_t committed_ = 0;      // the newest clock every server has written (as heard)
  bool prune_due_ = false;
  bool writing_ = false;
  bool busy_ = false;  // the writer thread tells, reports or prunes, without the lock
  bool stopping_ = false;
  Status first_error_;
  uint64_t last_written_ = 0;
  std::thread writer_;
};

}  // namespace poseidon::ps
