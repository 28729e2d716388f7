// CopyEngine: how the pipeline moves a layer's buffers between the trainer's GPU memory and the
// pinned host memory the schemes send from and update into, without stalling the trainer.
//
// The model is CUDA's: copies are queued on a small pool of copy streams, separate from the
// stream the trainer computes on, and ordered against it by events, so the copy of layer l's
// gradient overlaps the backward step of layer l-1 and the copy of its updated parameters the
// forward steps before l ([Poseidon ATC'17] section 4.1: the syncers move data between GPU and
// CPU on streams of their own). Each layer has a slot: its copies run in the order queued, on
// stream slot % streams. The CUDA engine (cuda/cuda_copy_engine.h) is the real one;
// ThreadCopyEngine (thread_copy_engine.h) is its CPU twin: the same ordering rules on threads,
// so the pipeline's staging logic runs in every test.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "common/deadline.h"
#include "common/status.h"

namespace poseidon::trainer {

struct CopySpan {
  void* to = nullptr;
  const void* from = nullptr;
  size_t bytes = 0;
};

// One user's copy streams and per-slot events (a pipeline's): see CopyEngine::createQueues.
class CopyQueues {
 public:
  virtual ~CopyQueues() = default;

  // Queues device-to-host copies on the slot's stream, after the work the trainer queued so far
  // on `compute_stream` (a cudaStream_t; nullptr: the default stream), so they read what that
  // work wrote. Returns at once; the sources must not change until waitToHost returned.
  virtual Status toHostAfterCompute(size_t slot, void* compute_stream, std::span<const CopySpan> copies) = 0;
  // Blocks the calling thread until the slot's queued device-to-host copies are done.
  virtual Status waitToHost(size_t slot, Deadline deadline) = 0;
  // Queues host-to-device copies on the slot's stream. Returns at once; the host sources must not
  // change until the copies are done (a later waitToHost or waitToDevice of the slot says so).
  virtual Status toDevice(size_t slot, std::span<const CopySpan> copies) = 0;
  // Makes the trainer's later work on `compute_stream` wait for the slot's queued host-to-device
  // copies: on a GPU the stream waits, not the calling thread.
  virtual Status computeAfterToDevice(size_t slot, void* compute_stream) = 0;
  // Blocks the calling thread until the slot's queued host-to-device copies are done.
  virtual Status waitToDevice(size_t slot, Deadline deadline) = 0;
};

// The process's device runtime (shared by every session of the process).
class CopyEngine {
 public:
  virtual ~CopyEngine() = default;

  // "cuda", "threads": for logs and errors.
  virtual const char* name() const = 0;
  // True for device memory the CPU cannot address; false for host memory of any kind and on a
  // machine without a device. An error only when the runtime works and cannot tell.
  virtual Result<bool> isDeviceMemory(const void* data, size_t bytes) = 0;
  // Page-locked host memory (asynchronous copies need it); freed with freePinned.
  virtual Result<void*> allocatePinned(size_t bytes) = 0;
  virtual void freePinned(void* host) = 0;
  // Copy queues for `slots` layers, their copies on a pool of `streams` streams (slot % streams).
  virtual Result<std::unique_ptr<CopyQueues>> createQueues(size_t slots, size_t streams) = 0;
};

// The engine of this build: CUDA's where the library was built with it and a device is present,
// else the CPU twin (on a machine without a device no pointer is device memory, so it never
// copies).
std::shared_ptr<CopyEngine> builtinCopyEngine();

}  // namespace poseidon::trainer
