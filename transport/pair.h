// Pair: the connection between this rank and one peer within a Context (Gloo's shape).
//
// Every operation is non-blocking and returns a Request. The contract both backends keep:
// - send/recv: per (pair, tag), messages match posted receives in order. Receives are posted
//   ahead; a sender never has more in flight than the receiver posted room for (credits).
//   A message larger than the posted receive fails both requests; it is never truncated.
// - write: copies a local registered range into a peer's registered region at an offset. The
//   peer learns of it only through the 32-bit immediate, which a recvImm() request receives
//   after the data is visible; writes on one pair are notified in the order posted.
// - failure: when the connection breaks, every pending request fails promptly with a status
//   that names the peer; later calls fail at once. Other pairs are untouched. A peer that closes
//   in order (its last message, then exit) has what it sent before delivered first.
// Calls may come from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "transport/memory.h"
#include "transport/request.h"
#include "transport/traffic.h"

namespace poseidon::transport {

// A byte range of a registered region, for scatter-gather sends.
struct Slice {
  const MemoryRegion* region = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
};

class Pair {
 public:
  virtual ~Pair() = default;

  virtual int peerRank() const = 0;
  // "rank 1 (10.0.0.2:5001)": how errors name this peer.
  virtual std::string peerName() const = 0;
  // OK while connected; the cause once the connection broke.
  virtual Status status() const = 0;
  // Payload bytes and messages this pair sent and received so far (the rule: traffic.h). Any
  // thread, cheap: it takes no lock.
  virtual PairTraffic traffic() const = 0;

  // Sends the concatenation of `slices` as one message on `tag`.
  virtual RequestPtr sendv(uint32_t tag, std::span<const Slice> slices) = 0;
  RequestPtr send(uint32_t tag, const MemoryRegion& region, uint64_t offset, uint64_t length) {
    const Slice slice{&region, offset, length};
    return sendv(tag, std::span<const Slice>(&slice, 1));
  }
  // Posts room for the next message on `tag`; request bytes() is the received length.
  virtual RequestPtr recv(uint32_t tag, MemoryRegion& region, uint64_t offset, uint64_t length) = 0;

  // One-sided write; the request completes when the local range may be reused.
  virtual RequestPtr write(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                           uint64_t remote_offset, uint64_t length, uint32_t imm) = 0;
  // Completes with imm() of the next write this peer made into our memory, in posted order.
  virtual RequestPtr recvImm() = 0;

  // As write(), with `payload_crc32c` the CRC32C (transport/wire/crc32c.h) of the local range,
  // which the caller computed while the bytes were in its cache (the ring, as it adds a piece).
  // A backend that checks payloads sends it instead of reading the range once more, when
  // takesPayloadCrc(length); else it is ignored. A wrong value fails the receiver's check, as
  // corruption on the way would: the caller vouches for bytes it does not change until the
  // request completes.
  virtual RequestPtr writeWithCrc(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                                  uint64_t remote_offset, uint64_t length, uint32_t imm, uint32_t payload_crc32c) {
    (void)payload_crc32c;
    return write(local, local_offset, remote, remote_offset, length, imm);
  }
  // Whether writeWithCrc() of `length` bytes sends the caller's CRC (one checked frame carries
  // it): a caller computes one only then.
  virtual bool takesPayloadCrc(uint64_t length) const {
    (void)length;
    return false;
  }
};

}  // namespace poseidon::transport
