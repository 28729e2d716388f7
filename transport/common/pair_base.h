// PairBase: the part of a Pair that is the same in every backend, below the wire.
//
// - naming the peer ("rank 1 (10.0.0.2:5001)") and each operation for error messages;
// - the lock a pair's state lives under, and its failure: the first cause wins, later calls fail
//   at once with it (status() reports it);
// - the frame every call runs in (submit): refuse bad arguments, fail at once on a broken
//   connection, otherwise start the operation under the lock and complete requests after it;
// - write notifications: recvImm() and the queue the backend feeds as writes land;
// - the traffic counters (traffic.h), counted where operations succeed, so the rule is kept
//   in one place: the backend reports each success through sentLocked, receivedLocked or
//   landedLocked;
// - the rule for logging a broken connection.
// The backend keeps everything about its wire: connection set-up, framing, credits' transport,
// and which requests are in flight there when it fails.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "transport/common/completion.h"
#include "transport/common/imm_queue.h"
#include "transport/pair.h"

namespace poseidon::transport {

class PairBase : public Pair {
 public:
  int peerRank() const final { return peer_rank_; }
  std::string peerName() const final;
  Status status() const final;
  RequestPtr recvImm() final;
  PairTraffic traffic() const final { return traffic_.read(); }

  // peerName() without the copy, for the hot path (set up before any traffic).
  const std::string& peerNameRef() const { return *peer_name_; }
  // Any thread, without the lock.
  bool failed() const { return failed_.load(std::memory_order_acquire); }

 protected:
  // `progress`: what threads waiting on this pair's requests may drive (nullptr: they sleep
  // until the backend's engine thread completes them).
  PairBase(int peer_rank, Progress* progress);

  // A request for the operation `label`, driven through this pair's progress (pooled: no heap
  // allocation in steady state).
  RequestPtr newRequest(RequestLabel label) const { return makeRequest(std::move(label), progress_); }

  // Labels of this pair's operations (RequestLabel: described only when asked).
  RequestLabel sendLabel(uint32_t tag) const { return {RequestLabel::Kind::kSend, tag, 0, peer_name_}; }
  RequestLabel recvLabel(uint32_t tag) const { return {RequestLabel::Kind::kRecv, tag, 0, peer_name_}; }
  RequestLabel writeLabel(uint64_t bytes, uint64_t region) const {
    return {RequestLabel::Kind::kWrite, bytes, region, peer_name_};
  }
  // Set-up, before calls from other threads name the peer: where the peer is.
  void setPeerAddress(const std::string& address);
  bool hasPeerAddress() const { return !peer_address_.empty(); }

  // Runs one Pair call: `invalid` (an argument check's result) fails `request` at once; a
  // failed pair fails it with its cause; otherwise `start(done)` runs under the lock. Requests
  // added to `done` complete after the lock is released. Returns `request`.
  template <typename Start>
  RequestPtr submit(RequestPtr request, const Status& invalid, Start&& start) {
    if (!invalid.isOk()) {
      request->complete(invalid);
      return request;
    }
    Completions done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failed()) {
        failRequest(done, request, failure_);
      } else {
        start(done);
      }
    }
    completeAll(done);
    return request;
  }

  // Under the lock. A send or write of `bytes` succeeded at this side: counts it and completes
  // `request` with its length after the lock.
  void sentLocked(Completions& done, const RequestPtr& request, uint64_t bytes) {
    traffic_.countSent(bytes);
    done.push_back({request, Status::ok(), bytes});
  }
  // Under the lock. A posted receive got its message of `bytes`: counts it and completes
  // `request` with that length after the lock.
  void receivedLocked(Completions& done, const RequestPtr& request, uint64_t bytes) {
    traffic_.countReceived(bytes);
    done.push_back({request, Status::ok(), bytes});
  }
  // Under the lock. A peer's write of `bytes` landed in our memory: counts it (the bytes are
  // there even if the peer then breaks the notification limit) and hands `imm` (and the checked
  // payload CRC, Request::payloadCrc) to recvImm().
  Status landedLocked(uint64_t bytes, uint32_t imm, Completions& done, std::optional<uint32_t> payload_crc = {}) {
    traffic_.countReceived(bytes);
    return imms_.deliver(imm, payload_crc, done);
  }

  // Under the lock: records `cause` as the pair's failure. False when it had already failed:
  // the first cause is the one every request reports.
  bool markFailedLocked(const Status& cause);

  // After a failure failed `failed_requests` pending requests. A peer that closes with nothing
  // pending is the normal end of a job (debug); one that takes requests down with it, breaks
  // the protocol or fails the handshake is worth a warning.
  // Warns when operations were cut short or the peer misbehaved; a receive posted for the next
  // write notification (there almost always is one) fails at every close and is no news.
  void logFailure(size_t failed_operations, size_t failed_notifications, const Status& cause) const;

  mutable std::mutex mutex_;
  Status failure_;        // under mutex_; OK until the pair fails
  ImmQueue imms_{*this};  // under mutex_

 private:
  const int peer_rank_;
  Progress* const progress_;
  // Set during set-up (setPeerAddress), before calls from other threads name the peer; shared
  // with every request's label.
  std::string peer_address_;
  std::shared_ptr<const std::string> peer_name_;
  std::atomic<bool> failed_{false};
  TrafficCounters traffic_;
};

}  // namespace poseidon::transport
