#include "transport/request.h"

#include <thread>
#include <vector>

namespace poseidon::transport {
namespace {
std::atomic<int64_t> g_spin_nanos{20000};
}

void Request::setSpinNanos(int64_t nanos) { g_spin_nanos.store(nanos, std::memory_order_relaxed); }

void Request::complete(Status status, uint64_t bytes, uint32_t imm) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_.load(std::memory_order_relaxed)) return;
    status_ = std::move(status);
    bytes_ = bytes;
    imm_ = imm;
    completed_at_ = Clock::now();
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

Status Request::wait(Deadline deadline) {
  if (test()) return status_;
  const int64_t spin = g_spin_nanos.load(std::memory_order_relaxed);
  if (spin > 0) {
    const auto spin_until = Clock::now() + std::chrono::nanoseconds(spin);
    while (Clock::now() < spin_until) {
      if (test()) return status_;
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (deadline.isNever()) {
    cv_.wait(lock, [this] { return done_.load(std::memory_order_acquire); });
  } else if (!cv_.wait_until(lock, deadline.at(), [this] { return done_.load(std::memory_order_acquire); })) {
    return makeStatus(StatusCode::kTimeout, "{} did not complete before its deadline", what_);
  }
  return status_;
}

RequestPtr failedRequest(std::string what, Status status) {
  auto request = std::make_shared<Request>(std::move(what));
  request->complete(status.withContext(request->what()));
  return request;
}

Status waitAll(const std::vector<RequestPtr>& requests, Deadline deadline) {
  Status first;
  for (const auto& request : requests) {
    Status st = request->wait(deadline);
    if (!st.isOk() && first.isOk()) first = st;
  }
  return first;
}

}  // namespace poseidon::transport
