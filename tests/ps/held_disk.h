// A checkpoint disk that writes nothing until opened and notes each file asked of it: a disk
// slower than the checkpoints come, held as long as a test needs.
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
  // Valid while this object lives.
  ps::WriteCheckpointFunction writer() {
    return [this](const std::string&, const ps::CheckpointIdentity&, const ps::CheckpointData& data, int) {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return open_; });
      written_.push_back(data.clock);
      return Status::ok();
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
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  std::vector<uint64_t> written_;
};

}  // namespace poseidon::testing
