// Verb: the one operation a test moves its messages with (perftest's --verb): two-sided send
// or one-sided write. The bandwidth and latency loops are written once against this.
#pragma once

#include <cstdint>
#include <memory>

#include "tools/perf/test_kind.h"
#include "transport/memory.h"
#include "transport/pair.h"
#include "transport/request.h"

namespace poseidon::perf {

// Tags of the two-sided messages: the test's own messages and the server's delivery acks.
inline constexpr uint32_t kDataTag = 1;
inline constexpr uint32_t kAckTag = 2;

// A zero-length message marks the end of a run whose length the peer could not know (-D): a
// send of no bytes, or a write of no bytes whose immediate has this bit.
inline constexpr uint32_t kMarkerImm = 0x80000000u;
inline uint32_t immFor(uint64_t index) { return static_cast<uint32_t>(index) & ~kMarkerImm; }

class Verb {
 public:
  virtual ~Verb() = default;

  // Moves `length` bytes at `local_offset` of our region to the peer (a write lands at
  // `remote_offset` of its region; a send where its posted receive says). length 0 with
  // kMarkerImm is an end marker.
  virtual transport::RequestPtr post(uint64_t local_offset, uint64_t remote_offset, uint64_t length, uint32_t imm) = 0;
  // Completes when the peer's next post has landed; a send lands at `offset` of our region,
  // `length` bytes at most (a write where the peer put it).
  virtual transport::RequestPtr expect(uint64_t offset, uint64_t length) = 0;
  // Whether a finished expect() request was the peer's end marker.
  virtual bool isMarker(const transport::Request& done) const = 0;
};

std::unique_ptr<Verb> makeSendVerb(transport::Pair& pair, transport::MemoryRegion& local);
std::unique_ptr<Verb> makeWriteVerb(transport::Pair& pair, transport::MemoryRegion& local,
                                    const transport::RemoteDescriptor& remote);
// The verb of `test`.
inline std::unique_ptr<Verb> makeVerb(TestKind test, transport::Pair& pair, transport::MemoryRegion& local,
                                      const transport::RemoteDescriptor& remote) {
  return usesWrite(test) ? makeWriteVerb(pair, local, remote) : makeSendVerb(pair, local);
}

}  // namespace poseidon::perf
