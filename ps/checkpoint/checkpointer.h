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
// or waiting to be is skipped (no snapshot is taken) and said, so memory stays bounded.
//
// A job resumes from a clock every server has a file of (ps/checkpoint/resume.h), and servers skip
// different checkpoints (each its own disk), so no server prunes by its own files alone. It tells
// the workers what became of each clock in clock order (hooks: written, failed, skipped), and the
// workers tell it back what all servers did (ps/checkpoint/checkpoint_commits.h): the committed
// clock, the newest every server has written (commit()), and the newest clock every server has
// passed (passedByAll()). It removes its files up to the committed clock but the newest `keep`,
// and those after it up to the passed one (no later clock up to that will be on every disk); it
// keeps every newer file, since any may yet be committed. The newest committed file is then on
// every disk, whatever each server has heard so far. And so that a server whose peers fall far
// behind or hang does not fill its disk, one holding `keep` such undecided files or snapshots
// skips what falls due, and says so: at most 2 x `keep` files of this run per server.
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
#include <utility>
#include <vector>

#include "ps/checkpoint/checkpoint.h"
#include "ps/shard.h"

namespace poseidon::ps {

// Why a checkpoint that fell due has no file.
enum class CheckpointMiss {
  kWriteFailed,      // writing the file failed
  kSkippedBehind,    // skipped: the disk had not finished the ones before it
  kSkippedAwaiting,  // skipped: `keep` undecided ones wait for the other servers
  // Async: a lost worker left out, a chunk's version jumped past the clock, so no state of the
  // clock exists (and the lost worker has no file of it to resume with).
  kPassedOver,
};

// Snapshots held for the disk at most (the one being written and those complete and waiting).
inline constexpr size_t kMaxSnapshotsAwaitingDisk = 2;

// What a checkpointer tells its server, on its writer thread; any may be empty.
struct CheckpointerHooks {
  std::function<void(uint64_t clock)> on_written;  // the file of `clock` is complete
  // Each failed write, and the newest of the checkpoints skipped since last said (with its reason).
  // With on_written, in clock order: the workers read each as "this server has passed the clock".
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

  // Called with a local chunk's lock held when its version jumps from `from` - 1 past the clocks
  // [from, to) at once (async, a lost worker left out; onVersion(to) follows): their checkpoints
  // are skipped, and a snapshot other chunks began is dropped, so none waits for good.
  void onPassedOver(uint64_t from, uint64_t to);

  // Called with local chunk `chunk`'s lock held each time it reaches `version`.
  void onVersion(uint32_t chunk, uint64_t version, uint64_t steps, std::span<const uint64_t> applied,
                 const float* params, const float* state0, const float* state1);

  // Waits until every complete snapshot is on disk and told, every skip said, and the files the
  // committed clock let go are gone; returns the first write failure.
  Status flush();
  // Every server has written its checkpoint of the clock whose low `bits` bits are `low`: the
  // files before it but the newest `keep` may go. True when that is one of this run's files newer
  // than the committed clock (or the committed clock itself); false for an older clock (a word
  // another worker already said) or one this server has no file of, which change nothing.
  bool commit(uint64_t low, uint32_t bits);
  // Every server has passed the clock whose low `bits` bits are `low` (it is at most the newest
  // clock this checkpointer told its hooks of): this server's files after the committed clock up
  // to it may go. False when no such clock exists (nothing told yet).
  bool passedByAll(uint64_t low, uint32_t bits);
  uint64_t committed() const;

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
  // Why the checkpoint of `version`, falling due now, is skipped, or nothing.
  std::optional<CheckpointMiss> skipReasonLocked(uint64_t version) const;
  void writerLoop();
  // Says the skipped checkpoints once for all; the lock is released meanwhile.
  void reportSkippedLocked(std::unique_lock<std::mutex>& lock);
  // Writes the oldest complete snapshot and tells of it; the lock is released meanwhile.
  void writeOldestLocked(std::unique_lock<std::mutex>& lock);
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
  // Skipped clocks the writer thread has not yet reported, ascending.
  std::vector<std::pair<uint64_t, CheckpointMiss>> skipped_;
  std::set<uint64_t> undecided_;  // this run's files after committed_ and passed_by_all_
  uint64_t committed_ = 0;        // the newest clock every server has written (as heard)
  uint64_t passed_by_all_ = 0;    // the newest clock every server has passed (as heard)
  uint64_t told_ = 0;             // the newest clock told to the hooks
  bool prune_due_ = true;         // a resumed run's older files go at once
  bool writing_ = false;
  bool busy_ = false;  // the writer thread tells, reports or prunes, without the lock
  bool stopping_ = false;
  Status first_error_;
  std::thread writer_;
};

}  // namespace poseidon::ps
