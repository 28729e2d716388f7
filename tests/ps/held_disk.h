// A checkpoint disk that writes nothing until opened and notes each file asked of it: a disk
// slower than the checkpoints come, held as long as a test needs. Once open it writes the files
// (ps::writeCheckpoint) if asked to, else only notes them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ps/checkpoint/checkpoint.h"

namespace poseidon::testing {

class HeldDisk {
 public:
  explicit HeldDisk(bool write_files = false) : write_files_(write_files) {}

  // Valid while this object lives.
  ps::WriteCheckpointFunction writer() {
    return [this](const std::string& dir, const ps::CheckpointIdentity& identity, const ps::CheckpointData& data) {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return open_; });
      written_.push_back(data.clock);
      lock.unlock();
      return write_files_ ? ps::writeCheckpoint(dir, identity, data) : Status::ok();
    };
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  // The clocks written so far, in order.
  std::vector<uint64_t> written() {
    std::lock_guard lock(mutex_);
    return written_;
  }

 private:
  const bool write_files_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  std::vector<uint64_t> written_;
};

}  // namespace poseidon::testing
