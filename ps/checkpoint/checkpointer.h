// Checkpointer: takes a server's checkpoints without stopping it.
//
// A checkpoint of clock T is due periodically (T a multiple of `every`) or on request. Each chunk
// is copied into the checkpoint's snapshot the moment it reaches version T (under that chunk's
// lock, before the next update can touch it), so the snapshot is exactly the state at T even
// though chunks move on independently; when the last chunk has arrived a background thread
// writes the file (ps/checkpoint.h: temporary file, fsync, rename). Nothing here blocks an update
// thread on another chunk or on the disk: each checkpoint in progress has its own snapshot.
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

class Checkpointer {
 public:
  // `on_failure` (any thread, may be empty) hears of each checkpoint whose file could not be
  // written, so the workers can be told.
  Checkpointer(std::string dir, CheckpointIdentity identity, const Shard& shard, uint64_t every, int keep,
               uint64_t start_clock, std::function<void(uint64_t clock, const Status&)> on_failure = {});
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
    std::vector<float> params, state0, state1;
    std::vector<uint64_t> steps, applied;
  };

  bool dueLocked(uint64_t version) const;
  void writerLoop();

  const std::function<void(uint64_t clock, const Status&)> on_failure_;
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
  bool writing_ = false;
  bool stopping_ = false;
  Status first_error_;
  uint64_t last_written_ = 0;
  std::thread writer_;
};

}  // namespace poseidon::ps
