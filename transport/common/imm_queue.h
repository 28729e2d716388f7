// ImmQueue: the immediates of one-sided writes on their way to Pair::recvImm().
//
// A write's immediate may land before anyone asked for it, and recvImm() may be called before
// the next write lands, so the queue holds either immediates nobody claimed yet or requests
// waiting for one (never both), each in arrival order: notifications keep the order writes were
// posted in. The backend decides when a write has landed (TCP: all its frames arrived; verbs:
// the write notice came after the RDMA WRITEs); this queue only matches the two sides.
//
// Unclaimed immediates are bounded: a peer that writes faster than the application ever claims
// is misbehaving, and holding its notifications without limit would exhaust memory.
// Not thread-safe: the owning Pair calls it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "transport/common/completion.h"
#include "transport/common/ring_queue.h"
#include "transport/pair.h"

namespace poseidon::transport {

class ImmQueue {
 public:
  static constexpr size_t kDefaultMaxUnclaimed = size_t{1} << 20;

  // `peer` names the writer in protocol errors.
  explicit ImmQueue(const Pair& peer, size_t max_unclaimed = kDefaultMaxUnclaimed)
      : peer_(peer), max_unclaimed_(max_unclaimed) {}

  // Completes `request` with the oldest unclaimed immediate; false when there is none.
  bool claim(const RequestPtr& request, Completions& done);
  // Makes `request` wait for the next write to land.
  void await(RequestPtr request) { waiters_.push_back(std::move(request)); }

  // A write landed: its immediate (and its payload's checked CRC, if one frame carried it)
  // completes the oldest waiter, or waits to be claimed. More unclaimed immediates than the limit
  // is the peer's protocol error (the immediate is dropped).
  Status deliver(uint32_t imm, std::optional<uint32_t> payload_crc, Completions& done);

  // The connection broke: every waiter fails with `cause`. Immediates already delivered stay
  // claimable, since their writes did land.
  void failWaiters(const Status& cause, Completions& done);

 private:
  const Pair& peer_;
  const size_t max_unclaimed_;
  struct Landed {
    uint32_t imm = 0;
    std::optional<uint32_t> payload_crc;
  };
  RingQueue<Landed> unclaimed_;
  RingQueue<RequestPtr> waiters_;
};

}  // namespace poseidon::transport
