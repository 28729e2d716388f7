// PairTraffic: what one pair moved, so a scheme's bytes on the wire can be checked against its
// cost formulas exactly, on every backend alike.
//
// The counting rule, the same in every backend:
// - Payload bytes only: the bytes the application handed to send()/sendv()/write() and the
//   bytes that landed in its memory. Frame headers, credits and clear-to-sends, control
//   messages, the handshake and retransmissions are the backend's overhead, not the scheme's.
// - A message is one send()/sendv() or one write(), however the backend cut it up on the wire
//   (stripes over TCP streams, several RDMA WRITEs). A zero-length write is a message of 0 bytes:
//   it carries only its immediate. So is a zero-length send.
// - Sent counts when the operation completes successfully at this side, just before its request
//   reports success, with the request's length. Not when posted: a send may wait for the peer's
//   room, and one that fails (larger than the room, connection broken) delivered nothing, so it
//   is never counted; and whoever waited for the request already sees it in the counters.
// - Received counts when a recv() completes (the message's length, not the room posted) or when a
//   peer's write has landed (its full length), before the recvImm() that reports it.
// - Device memory behind a host copy (memory.h) counts once, as the payload it is: the copies
//   between host and device are not traffic.
// A failed operation counts on neither side.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>

namespace poseidon::transport {

struct PairTraffic {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;

  PairTraffic& operator+=(const PairTraffic& other) {
    bytes_sent += other.bytes_sent;
    bytes_received += other.bytes_received;
    messages_sent += other.messages_sent;
    messages_received += other.messages_received;
    return *this;
  }
  friend bool operator==(const PairTraffic&, const PairTraffic&) = default;
};

// What moved between two readings of the same pair's counters (`before` taken first).
inline PairTraffic trafficSince(const PairTraffic& before, const PairTraffic& after) {
  return {after.bytes_sent - before.bytes_sent, after.bytes_received - before.bytes_received,
          after.messages_sent - before.messages_sent, after.messages_received - before.messages_received};
}

// For test failures and logs: "sent 10 bytes in 2 messages, received 0 bytes in 0 messages".
inline std::ostream& operator<<(std::ostream& os, const PairTraffic& t) {
  return os << "sent " << t.bytes_sent << " bytes in " << t.messages_sent << " messages, received " << t.bytes_received
            << " bytes in " << t.messages_received << " messages";
}

// The live counters behind Pair::traffic(). The backend counts under its pair lock; readers on
// any thread take no lock. Relaxed order is enough: each counter is exact on its own, and a
// reader who waited for a request sees that request counted, since the count comes before the
// request's completion is published. A reading taken while traffic flows may mix moments across
// the four fields.
class TrafficCounters {
 public:
  void countSent(uint64_t bytes) {
    bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
    messages_sent_.fetch_add(1, std::memory_order_relaxed);
  }
  void countReceived(uint64_t bytes) {
    bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
    messages_received_.fetch_add(1, std::memory_order_relaxed);
  }
  PairTraffic read() const {
    return {bytes_sent_.load(std::memory_order_relaxed), bytes_received_.load(std::memory_order_relaxed),
            messages_sent_.load(std::memory_order_relaxed), messages_received_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> messages_sent_{0};
  std::atomic<uint64_t> messages_received_{0};
};

}  // namespace poseidon::transport
