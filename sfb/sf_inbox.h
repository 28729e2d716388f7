// SfInbox: the SFB writes one peer made into this worker's receive buffer, as they land.
//
// A pair delivers one ordered stream of immediates for all layers, while the calls that wait for
// them run on different threads, one per layer at most. So whoever waits drives the stream: the
// first waiter takes the posted recvImm() and blocks on it (with its own deadline), records each
// immediate it gets in a table of arrivals per layer and wakes the others; they sleep on a
// condition variable until the table says their factors are in, or the stream is free for them to
// drive. One receive stays posted across drivers, so a waiter that gives up never loses an
// immediate. No thread of its own, no busy polling, and a waiter never waits past its deadline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "sfb/sf_slots.h"
#include "transport/pair.h"

namespace poseidon::sfb {

class SfInbox {
 public:
  // `own_iterations[l]`: this worker's current iteration on layer l. It bounds what a peer may
  // send: its slot bank for iteration t + 2 is the one this worker reads during t.
  SfInbox(transport::Pair& pair, const SfSlotLayout& layout, std::span<const std::atomic<uint64_t>> own_iterations);
  SfInbox(const SfInbox&) = delete;
  SfInbox& operator=(const SfInbox&) = delete;

  // OK once the peer's factors of `layer` for `iteration` have landed (also after the peer broke
  // off, since they did land). Otherwise the peer's failure as soon as it is known: a protocol
  // error naming it (an immediate for an unknown layer, an iteration out of sequence or more
  // than one ahead of this worker) or its broken connection. kTimeout when the deadline passes
  // first; a deadline already passed only takes what has landed, without blocking.
  Status waitFor(size_t layer, uint64_t iteration, Deadline deadline);

  // Writes of `layer` from this peer that landed so far (its iterations 0 .. n-1).
  uint64_t arrivals(size_t layer) const;

  transport::Pair& pair() const { return pair_; }

 private:
  // The landed write's immediate: checks it and counts it, or the protocol error.
  Status recordLocked(uint32_t imm);

  transport::Pair& pair_;
  const SfSlotLayout& layout_;
  const std::span<const std::atomic<uint64_t>> own_iterations_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // arrivals recorded, a failure, or the stream left undriven
  bool driving_ = false;
  transport::RequestPtr posted_;  // the recvImm() waiting for the peer's next write, if any
  Status failure_;                // the first failure; later immediates are not read
  std::vector<uint64_t> arrived_;
};

}  // namespace poseidon::sfb
