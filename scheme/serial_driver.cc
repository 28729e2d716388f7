#include "scheme/serial_driver.h"

#include <algorithm>
#include <exception>
#include <utility>

namespace poseidon::scheme {

SerialDriver::SerialDriver(std::string name) : name_(std::move(name)), thread_([this] { loop(); }) {}

SerialDriver::~SerialDriver() {
  std::deque<Work> abandoned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    abandoned.swap(queue_);
  }
  signal_->notify();
  // Work not yet started is failed, not run: it could wait for a silent peer until its deadline
  // (or forever, under Deadline::never()), and whoever destroys a scheme is done with it.
  for (Work& work : abandoned) {
    work.request->complete(
        makeStatus(StatusCode::kUnavailable, "{}: the {} shut down before it ran", work.request->what(), name_));
  }
  thread_.join();  // the work running now ends by its own deadline
}

transport::RequestPtr SerialDriver::submit(std::string what, std::function<Status()> work) {
  return submit(std::move(what), std::move(work), Gate{});
}

transport::RequestPtr SerialDriver::submit(std::string what, std::function<Status()> work, Gate gate) {
  auto request = std::make_shared<transport::Request>(std::move(what));
  for (const transport::RequestPtr& waited : gate.requests) waited->signalOnCompletion(signal_);
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back({request, std::move(work), std::move(gate)});
      queued = true;
    }
  }
  if (queued) {
    signal_->notify();
    return request;
  }
  request->complete(makeStatus(StatusCode::kUnavailable, "{}: the {} is shutting down", request->what(), name_));
  return request;
}

size_t SerialDriver::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + running_;
}

Status SerialDriver::run(Work& work) {
  try {
    return work.run();
  } catch (const std::exception& e) {  // e.g. bad_alloc: the request fails, the driver goes on
    return makeStatus(StatusCode::kInternal, "{}: {}", work.request->what(), e.what());
  }
}

bool SerialDriver::ready(const Work& work) {
  if (work.gate.deadline.expired()) return true;
  return std::all_of(work.gate.requests.begin(), work.gate.requests.end(),
                     [](const transport::RequestPtr& request) { return request->test(); });
}

void SerialDriver::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // Read before looking (completion_signal.h): what completes after the look moves it on.
    const uint64_t seen = signal_->generation();
    if (queue_.empty() && stopping_) return;  // everything queued has run
    const auto next = std::find_if(queue_.begin(), queue_.end(), ready);
    if (next == queue_.end()) {
      Deadline until = Deadline::never();  // the first gate's deadline opens it regardless
      for (const Work& work : queue_) {
        if (work.gate.deadline.at() < until.at()) until = work.gate.deadline;
      }
      lock.unlock();
      (void)signal_->waitPast(seen, until);
      lock.lock();
      continue;
    }
    Work work = std::move(*next);
    queue_.erase(next);
    ++running_;
    lock.unlock();
    Status status = run(work);
    lock.lock();
    --running_;
    // After the count: whoever sees the request done sees pending() without its work (completing
    // first let a caller that waited for every request still count one running).
    work.request->complete(std::move(status));
  }
}

}  // namespace poseidon::scheme
