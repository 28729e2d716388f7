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
#include <optional>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/completion_signal.h"
#include "transport/progress.h"

namespace poseidon::transport {

// What a backend's operation is, kept in parts and put into words only when somebody asks (an
// error, a timeout): an operation that succeeds never pays for formatting its description.
struct RequestLabel {
  enum class Kind : uint8_t { kSend, kRecv, kWrite, kWriteNotification };
  Kind kind = Kind::kSend;
  uint64_t number = 0;                      // the tag (send, recv) or the byte count (write)
  uint64_t region = 0;                      // write: the remote region's key
  std::shared_ptr<const std::string> peer;  // "rank 1 (10.0.0.2:5001)"

  // "send tag 7 to rank 1 (...)", "recv tag 7 from ...", "write of 64 bytes to region 3 of
  // ...", "write notification from ...".
  std::string format() const;
};

class Request {
 public:
  // `what` describes the operation for error messages: "recv tag 7 from rank 1 (10.0.0.2:5001)".
  // `progress`: what a waiting thread may drive instead of sleeping (progress.h); it must
  // outlive the request's pending life (a backend fails its requests before it goes away).
  explicit Request(std::string what, Progress* progress = nullptr) : what_(std::move(what)), progress_(progress) {}
  // A backend's operation, described when asked.
  Request(RequestLabel label, Progress* progress) : label_(std::move(label)), labelled_(true), progress_(progress) {}
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // True once the request has finished, successfully or not. Never blocks.
  bool test() const { return done_.load(std::memory_order_acquire); }
  // Blocks until finished or the deadline passes, driving the backend itself when no other
  // thread does. On timeout returns kTimeout naming the operation; the request stays pending and
  // can be waited on again.
  Status wait(Deadline deadline);

  // Valid once test() is true.
  const Status& status() const { return status_; }
  uint64_t bytes() const { return bytes_; }
  uint32_t imm() const { return imm_; }
  // A write notification's: the CRC32C its payload arrived with and was checked against, when
  // one checked frame carried it (TCP with payload CRCs). A caller that sends those bytes on
  // unchanged may pass it to Pair::writeWithCrc rather than have them read again.
  std::optional<uint32_t> payloadCrc() const { return payload_crc_; }
  // When the backend completed it: benchmarks time operations by this, not by when a busy
  // caller got round to looking.
  Clock::time_point completedAt() const { return completed_at_; }
  const std::string& what() const;

  // Notifies `signal` when the request completes (at once if it already has), for a thread that
  // waits for whichever of several requests finishes first (completion_signal.h). Each signal
  // given while the request is pending is notified once, however often it was given.
  void signalOnCompletion(std::shared_ptr<CompletionSignal> signal);

  // Backend side: the first call wins, later ones are ignored (a request that already
  // succeeded does not turn into a failure when its connection breaks afterwards).
  void complete(Status status, uint64_t bytes = 0, uint32_t imm = 0, std::optional<uint32_t> payload_crc = {});

  // How long wait() spins before sleeping when another thread drives the backend (a wake-up
  // across cores costs tens of microseconds). Process-wide.
  static void setSpinNanos(int64_t nanos);

 private:
  // wait() without driving: spins briefly, then sleeps until complete() or the deadline.
  Status sleep(Deadline deadline);

  std::atomic<bool> done_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Status status_;
  uint64_t bytes_ = 0;
  uint32_t imm_ = 0;
  std::optional<uint32_t> payload_crc_;
  Clock::time_point completed_at_{};
  mutable std::string what_;  // with a label: formatted on the first what(), under mutex_
  RequestLabel label_;
  const bool labelled_ = false;
  // Under mutex_. The first signal inline: a request watched by two threads is rare, and only that
  // allocates.
  std::shared_ptr<CompletionSignal> signal_;
  std::vector<std::shared_ptr<CompletionSignal>> more_signals_;
  Progress* const progress_;
};

using RequestPtr = std::shared_ptr<Request>;

// A backend's request, its memory from a pool (common/block_pool.h): no heap allocation per
// operation in steady state.
RequestPtr makeRequest(RequestLabel label, Progress* progress);
// Makes sure `count` requests can be made without reaching the heap (a device's set-up).
void reserveRequests(size_t count);

// A request that has already failed (argument errors, broken connections).
RequestPtr failedRequest(std::string what, Status status);

// Waits for every request; returns the first failure, if any.
Status waitAll(const std::vector<RequestPtr>& requests, Deadline deadline);

}  // namespace poseidon::transport
