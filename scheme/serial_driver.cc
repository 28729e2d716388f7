#include "scheme/serial_driver.h"

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
  cv_.notify_all();
  // Work not yet started is failed, not run: it could wait for a silent peer until its deadline
  // (or forever, under Deadline::never()), and whoever destroys a scheme is done with it.
  for (Work& work : abandoned) {
    work.request->complete(
        makeStatus(StatusCode::kUnavailable, "{}: the {} shut down before it ran", work.request->what(), name_));
  }
  thread_.join();  // the work running now ends by its own deadline
}

transport::RequestPtr SerialDriver::submit(std::string what, std::function<Status()> work) {
  auto request = std::make_shared<transport::Request>(std::move(what));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back({request, std::move(work)});
      cv_.notify_one();
      return request;
    }
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

void SerialDriver::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    Work work = std::move(queue_.front());
    queue_.pop_front();
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
