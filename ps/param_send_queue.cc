#include "ps/param_send_queue.h"

#include <algorithm>

namespace poseidon::ps {

ParamSendQueue::ParamSendQueue(int workers, std::vector<uint64_t> chunk_bytes, uint64_t window_bytes, Post post)
    : chunk_bytes_(std::move(chunk_bytes)),
      window_bytes_(window_bytes),
      post_(std::move(post)),
      workers_(static_cast<size_t>(workers)),
      thread_([this] { loop(); }) {}

ParamSendQueue::~ParamSendQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  signal_->notify();
  thread_.join();
}

void ParamSendQueue::enqueue(int worker, uint32_t chunk) {
  {
    std::lock_guard lock(mutex_);
    std::vector<Held>& held = workers_[static_cast<size_t>(worker)].held;
    held.emplace_back(chunk, sequence_++);
    std::push_heap(held.begin(), held.end(), std::greater<>());
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
    while (!queue.held.empty()) {
      const uint64_t bytes = chunk_bytes_[queue.held.front().first];
      if (queue.in_flight_bytes > 0 && queue.in_flight_bytes + bytes > window_bytes_) break;
      std::pop_heap(queue.held.begin(), queue.held.end(), std::greater<>());
      out.push_back({static_cast<int>(w), queue.held.back().first});
      queue.held.pop_back();
      queue.in_flight_bytes += bytes;
    }
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
