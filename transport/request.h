// Request: the handle every non-blocking transport call returns (NCCL net-plugin style).
//
// test() never blocks; wait(deadline) blocks until the request finishes or the deadline passes.
// A finished request holds a Status (naming the peer and the cause on failure), the number of
// bytes moved and, for write notifications, the 32-bit immediate.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"

namespace poseidon::transport {

class Request {
 public:
  // `what` describes the operation for error messages: "recv tag 7 from rank 1 (10.0.0.2:5001)".
  explicit Request(std::string what) : what_(std::move(what)) {}
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // True once the request has finished, successfully or not. Never blocks.
  bool test() const { return done_.load(std::memory_order_acquire); }
  // Blocks until finished or the deadline passes. On timeout returns kTimeout naming the
  // operation; the request stays pending and can be waited on again.
  Status wait(Deadline deadline);

  // Valid once test() is true.
  const Status& status() const { return status_; }
  uint64_t bytes() const { return bytes_; }
  uint32_t imm() const { return imm_; }
  // When the backend completed it: benchmarks time operations by this, not by when a busy
  // caller got round to looking.
  Clock::time_point completedAt() const { return completed_at_; }
  const std::string& what() const { return what_; }

  // Backend side: the first call wins, later ones are ignored (a request that already
  // succeeded does not turn into a failure when its connection breaks afterwards).
  void complete(Status status, uint64_t bytes = 0, uint32_t imm = 0);

  // How long wait() spins before sleeping: a wake-up across cores costs ~70 us here, so
  // latency-sensitive users spin. Process-wide.
  static void setSpinNanos(int64_t nanos);

 private:
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  Status status_;
  uint64_t bytes_ = 0;
  uint32_t imm_ = 0;
  Clock::time_point completed_at_{};
  std::string what_;
};

using RequestPtr = std::shared_ptr<Request>;

// A request that has already failed (argument errors, broken connections).
RequestPtr failedRequest(std::string what, Status status);

// Waits for every request; returns the first failure, if any.
Status waitAll(const std::vector<RequestPtr>& requests, Deadline deadline);

}  // namespace poseidon::transport
