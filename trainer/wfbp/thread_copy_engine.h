// ThreadCopyEngine: CopyEngine's CPU twin. Each copy stream is a thread that runs its queued
// copies in order; a slot's copies go to stream slot % streams, as on the GPU. The trainer's
// "compute stream" is its own thread: work it did before a call is done, so toHostAfterCompute
// orders after it by construction, and computeAfterToDevice waits on the calling thread.
//
// Which memory counts as "device" is the caller's to say (by default none): tests name ranges
// they treat as GPU memory and give the copies a delay, so a pipeline that read staging before
// its copy landed, or let the trainer read parameters before theirs did, computes other bits.
#pragma once

#include <chrono>
#include <functional>

#include "trainer/wfbp/copy_engine.h"

namespace poseidon::trainer {

struct ThreadCopyEngineOptions {
  // Whether a range is "device memory"; empty: nothing is.
  std::function<bool(const void* data, size_t bytes)> is_device;
  // Each queued copy waits this long before it runs (a slow link to the GPU).
  std::chrono::microseconds delay{0};
};

class ThreadCopyEngine final : public CopyEngine {
 public:
  explicit ThreadCopyEngine(ThreadCopyEngineOptions options = {}) : options_(std::move(options)) {}

  const char* name() const override { return "threads"; }
  Result<bool> isDeviceMemory(const void* data, size_t bytes) override;
  Result<void*> allocatePinned(size_t bytes) override;
  void freePinned(void* host) override;
  Result<std::unique_ptr<CopyQueues>> createQueues(size_t slots, size_t streams) override;

 private:
  const ThreadCopyEngineOptions options_;
};

}  // namespace poseidon::trainer
