#include "ps/param_send_queue.h"

#include <algorithm>
#include <system_error>

namespace poseidon::ps {

ParamSendQueue::ParamSendQueue(int workers, std::vector<uint64_t> chunk_bytes, uint64_t window_bytes, Post post)
    : chunk_bytes_(std::move(chunk_bytes)),
      window_bytes_(window_bytes),
      post_(std::move(post)),
      workers_(static_cast<size_t>(workers)) {}

ParamSendQueue::~ParamSendQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  signal_->notify();
  if (thread_.joinable()) thread_.join();
}

Status ParamSendQueue::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return Status::ok();
  try {
    thread_ = std::thread([this] { loop(); });
  } catch (const std::system_error& error) {
    return makeStatus(StatusCode::kUnavailable, "cannot start the priority send queue's thread: {}", error.what());
  }
  return Status::ok();
}

void ParamSendQueue::enqueue(int worker, uint32_t chunk) {
  {
    std::lock_guard lock(mutex_);
    workers_[static_cast<size_t>(worker)].held.hold(chunk, chunk);
  }
  signal_->notify();
}

size_t ParamSendQueue::held() const {
  std::lock_guard lock(mutex_);
  size_t count = 0;
  for (const WorkerQueue& queue : workers_) count += queue.held.size();
  return count;
}

void ParamSendQueue::takeSendable(std::vector<Posting>& out) {
  for (size_t w = 0; w < workers_.size(); ++w) {
    WorkerQueue& queue = workers_[w];
    std::erase_if(queue.in_flight, [&](const auto& write) {
      if (!write.first->test()) return false;
      queue.in_flight_bytes -= write.second;
      return true;
    });
    queue.held.release(
        queue.in_flight_bytes, window_bytes_, [&](uint32_t chunk) { return chunk_bytes_[chunk]; },
        [&](uint32_t chunk) {
          out.push_back({static_cast<int>(w), chunk});
        });
  }
}

void ParamSendQueue::loop() {
  std::vector<Posting> sendable;
  for (;;) {
    // Read before looking (completion_signal.h): a write finishing after the look moves it on.
    const uint64_t seen = signal_->generation();
    sendable.clear();
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      takeSendable(sendable);
    }
    if (sendable.empty()) {
      (void)signal_->waitPast(seen, Deadline::never());
      continue;
    }
    // Posted without the queue's lock: the server's post takes the chunk's lock, under which it
    // may itself enqueue.
    for (const Posting& posting : sendable) {
      transport::RequestPtr write = post_(posting.worker, posting.chunk);
      if (write) write->signalOnCompletion(signal_);
      std::lock_guard lock(mutex_);
      WorkerQueue& queue = workers_[static_cast<size_t>(posting.worker)];
      const uint64_t bytes = chunk_bytes_[posting.chunk];
      if (write) {
        queue.in_flight.emplace_back(std::move(write), bytes);
      } else {
        queue.in_flight_bytes -= bytes;  // the worker is gone
      }
    }
  }
}

}  // namespace poseidon::ps
