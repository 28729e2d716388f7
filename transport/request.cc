#include "transport/request.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "transport/common/block_pool.h"

namespace poseidon::transport {
namespace {
std::atomic<int64_t> g_spin_nanos{20000};
}

std::string RequestLabel::format() const {
  const std::string& name = peer ? *peer : std::string();
  switch (kind) {
    case Kind::kSend: return fmt::format("send tag {} to {}", number, name);
    case Kind::kRecv: return fmt::format("recv tag {} from {}", number, name);
    case Kind::kWrite: return fmt::format("write of {} bytes to region {} of {}", number, region, name);
    case Kind::kWriteNotification: return fmt::format("write notification from {}", name);
  }
  return "transport operation";
}

const std::string& Request::what() const {
  if (!labelled_) return what_;
  std::lock_guard<std::mutex> lock(mutex_);
  if (what_.empty()) what_ = label_.format();
  return what_;
}

RequestPtr makeRequest(RequestLabel label, Progress* progress) {
  return std::allocate_shared<Request>(PoolAllocator<Request>(), std::move(label), progress);
}

void reserveRequests(size_t count) { reservePooled<Request>(count, RequestLabel{}, static_cast<Progress*>(nullptr)); }

void Request::setSpinNanos(int64_t nanos) { g_spin_nanos.store(nanos, std::memory_order_relaxed); }

void Request::complete(Status status, uint64_t bytes, uint32_t imm, std::optional<uint32_t> payload_crc) {
  std::shared_ptr<CompletionSignal> signal;
  std::vector<std::shared_ptr<CompletionSignal>> more_signals;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_.load(std::memory_order_relaxed)) return;
    status_ = std::move(status);
    bytes_ = bytes;
    imm_ = imm;
    payload_crc_ = payload_crc;
    completed_at_ = Clock::now();
    done_.store(true, std::memory_order_release);
    signal = std::move(signal_);
    more_signals = std::move(more_signals_);
  }
  cv_.notify_all();
  if (signal) signal->notify();
  for (const std::shared_ptr<CompletionSignal>& more : more_signals) more->notify();
}

void Request::signalOnCompletion(std::shared_ptr<CompletionSignal> signal) {
  if (!signal) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_.load(std::memory_order_relaxed)) {
      if (!signal_) {
        signal_ = std::move(signal);
      } else if (signal_ != signal &&
                 std::find(more_signals_.begin(), more_signals_.end(), signal) == more_signals_.end()) {
        more_signals_.push_back(std::move(signal));
      }
      return;
    }
  }
  signal->notify();
}

Status Request::wait(Deadline deadline) {
  if (test()) return status_;
  if (progress_ != nullptr) {
    progress_->drive(*this, deadline);
    if (test()) return status_;
    progress_->sleeping(true);
    Status status = sleep(deadline);
    progress_->sleeping(false);
    return status;
  }
  return sleep(deadline);
}

Status Request::sleep(Deadline deadline) {
  const int64_t spin = g_spin_nanos.load(std::memory_order_relaxed);
  if (spin > 0) {
    const auto spin_until = Clock::now() + std::chrono::nanoseconds(spin);
    while (Clock::now() < spin_until) {
      if (test()) return status_;
    }
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (deadline.isNever()) {
      cv_.wait(lock, [this] { return done_.load(std::memory_order_acquire); });
      return status_;
    }
    if (cv_.wait_until(lock, deadline.at(), [this] { return done_.load(std::memory_order_acquire); })) return status_;
  }
  // what() formats a label under the same mutex.
  return makeStatus(StatusCode::kTimeout, "{} did not complete before its deadline", what());
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
