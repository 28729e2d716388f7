#include "trainer/wfbp/thread_copy_engine.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "common/deadline_wait.h"

namespace poseidon::trainer {

namespace {

// Each stream a thread running its queued copies in order.
class ThreadCopyQueues final : public CopyQueues {
 public:
  ThreadCopyQueues(size_t slots, size_t streams, std::chrono::microseconds delay);
  ~ThreadCopyQueues() override;

  Status toHostAfterCompute(size_t slot, void* compute_stream, std::span<const CopySpan> copies) override;
  Status waitToHost(size_t slot, Deadline deadline) override;
  Status toDevice(size_t slot, std::span<const CopySpan> copies) override;
  Status computeAfterToDevice(size_t slot, void* compute_stream) override;
  Status waitToDevice(size_t slot, Deadline deadline) override;

 private:
  static constexpr size_t kMaxCopies = 4;
  struct Task {
    size_t slot = 0;
    bool to_device = false;
    std::array<CopySpan, kMaxCopies> copies{};
    size_t count = 0;
  };
  struct Stream {
    std::vector<Task> ring;  // fixed capacity
    size_t head = 0, count = 0;
    std::condition_variable wake;
    std::thread thread;
  };
  struct SlotCounts {
    uint64_t to_host_queued = 0, to_host_done = 0;
    uint64_t to_device_queued = 0, to_device_done = 0;
  };

  Status enqueue(size_t slot, bool to_device, std::span<const CopySpan> copies);
  Status waitDone(size_t slot, bool to_device, Deadline deadline);
  void run(Stream& stream);

  const std::chrono::microseconds delay_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<SlotCounts> slots_;
  bool stopping_ = false;
};

ThreadCopyQueues::ThreadCopyQueues(size_t slots, size_t streams, std::chrono::microseconds delay)
    : delay_(delay), slots_(slots) {
  for (size_t s = 0; s < streams; ++s) {
    auto stream = std::make_unique<Stream>();
    // A slot has at most one copy each way queued per iteration, and two iterations overlap.
    stream->ring.resize(4 * ((slots + streams - 1) / streams));
    streams_.push_back(std::move(stream));
  }
  for (auto& stream : streams_) {
    Stream* s = stream.get();
    s->thread = std::thread([this, s] { run(*s); });
  }
}

ThreadCopyQueues::~ThreadCopyQueues() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  for (auto& stream : streams_) stream->wake.notify_all();
  for (auto& stream : streams_) stream->thread.join();
}

Status ThreadCopyQueues::enqueue(size_t slot, bool to_device, std::span<const CopySpan> copies) {
  std::unique_lock lock(mutex_);
  if (slot >= slots_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "copy slot {}: the engine has {} slots", slot, slots_.size());
  }
  if (copies.size() > kMaxCopies) {
    return makeStatus(StatusCode::kInvalidArgument, "{} copies in one call: at most {}", copies.size(), kMaxCopies);
  }
  Stream& stream = *streams_[slot % streams_.size()];
  if (stream.count == stream.ring.size()) {
    return makeStatus(StatusCode::kInternal, "copy stream {} has {} copies queued: full", slot % streams_.size(),
                      stream.count);
  }
  Task& task = stream.ring[(stream.head + stream.count) % stream.ring.size()];
  task.slot = slot;
  task.to_device = to_device;
  task.count = copies.size();
  std::copy(copies.begin(), copies.end(), task.copies.begin());
  ++stream.count;
  ++(to_device ? slots_[slot].to_device_queued : slots_[slot].to_host_queued);
  lock.unlock();
  stream.wake.notify_one();
  return Status::ok();
}

void ThreadCopyQueues::run(Stream& stream) {
  std::unique_lock lock(mutex_);
  for (;;) {
    stream.wake.wait(lock, [&] { return stopping_ || stream.count > 0; });
    if (stream.count == 0) return;
    const Task task = stream.ring[stream.head];
    lock.unlock();
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    for (size_t c = 0; c < task.count; ++c) std::memcpy(task.copies[c].to, task.copies[c].from, task.copies[c].bytes);
    lock.lock();
    stream.head = (stream.head + 1) % stream.ring.size();
    --stream.count;
    ++(task.to_device ? slots_[task.slot].to_device_done : slots_[task.slot].to_host_done);
    done_.notify_all();
  }
}

Status ThreadCopyQueues::waitDone(size_t slot, bool to_device, Deadline deadline) {
  std::unique_lock lock(mutex_);
  if (slot >= slots_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "copy slot {}: the engine has {} slots", slot, slots_.size());
  }
  const SlotCounts& counts = slots_[slot];
  const bool done = waitWithDeadline(done_, lock, deadline, [&] {
    return to_device ? counts.to_device_done == counts.to_device_queued : counts.to_host_done == counts.to_host_queued;
  });
  if (!done) {
    return makeStatus(StatusCode::kTimeout, "copies of slot {} to the {} not done by the deadline", slot,
                      to_device ? "device" : "host");
  }
  return Status::ok();
}

Status ThreadCopyQueues::toHostAfterCompute(size_t slot, void*, std::span<const CopySpan> copies) {
  return enqueue(slot, false, copies);
}

Status ThreadCopyQueues::waitToHost(size_t slot, Deadline deadline) { return waitDone(slot, false, deadline); }

Status ThreadCopyQueues::toDevice(size_t slot, std::span<const CopySpan> copies) { return enqueue(slot, true, copies); }

Status ThreadCopyQueues::computeAfterToDevice(size_t slot, void*) {
  // The trainer computes on its own thread here: it waits as a GPU stream would.
  return waitDone(slot, true, Deadline::after(std::chrono::seconds(60)));
}

Status ThreadCopyQueues::waitToDevice(size_t slot, Deadline deadline) { return waitDone(slot, true, deadline); }

}  // namespace

Result<bool> ThreadCopyEngine::isDeviceMemory(const void* data, size_t bytes) {
  return options_.is_device ? options_.is_device(data, bytes) : false;
}

Result<void*> ThreadCopyEngine::allocatePinned(size_t bytes) {
  void* host = std::malloc(bytes == 0 ? 1 : bytes);
  if (host == nullptr) return makeStatus(StatusCode::kIoError, "allocating {} bytes of staging memory failed", bytes);
  return host;
}

void ThreadCopyEngine::freePinned(void* host) { std::free(host); }

Result<std::unique_ptr<CopyQueues>> ThreadCopyEngine::createQueues(size_t slots, size_t streams) {
  if (slots == 0 || streams == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "copy queues for {} slots on {} streams: expected both >= 1", slots,
                      streams);
  }
  return std::unique_ptr<CopyQueues>(std::make_unique<ThreadCopyQueues>(slots, streams, options_.delay));
}

}  // namespace poseidon::trainer
