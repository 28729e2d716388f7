// The registered memory of a run: allocated, faulted in and registered once before any timing,
// laid out the same on both sides so either can compute where the other's slots are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tools/perf/parameters.h"
#include "transport/context.h"

namespace poseidon::perf {

// Bandwidth tests cycle through a ring of slots of the message size, about kRingBytes in all:
// perftest's cycle buffer, which is one page by default, so messages of a page or more reuse
// one buffer as in ib_write_bw (and iperf3), and smaller ones spread over the page. Latency
// tests use two slots: [outgoing | incoming].
inline constexpr uint64_t kRingBytes = 4096;
inline constexpr uint64_t kMaxSlots = 256;
// The server's delivery acks: a ring of 8-byte counters on both sides. Deep, because the
// client's receives for acks grant their credits through the same stream as its data: each
// credit reaches the server only after everything queued before it (up to --tx-depth messages,
// hundreds of MiB), so fewer acks in flight would throttle the acks, not the data, and make -D
// under-report (64 slots measured 2 MiB writes at half their real rate).
inline constexpr uint64_t kAckSlots = 1024;
inline constexpr uint64_t kAckBytes = 8;

uint64_t slotCount(uint64_t size);
// Offset of bandwidth message `index` of `size` bytes.
inline uint64_t slotOffset(uint64_t index, uint64_t size) { return (index % slotCount(size)) * size; }
// Bytes of the data region both sides allocate for `params`.
uint64_t dataRegionBytes(const RunParameters& params);

// Page-aligned anonymous memory, registered with a context; the region is deregistered before
// the memory is unmapped.
class RegisteredBuffer {
 public:
  static Result<std::unique_ptr<RegisteredBuffer>> create(transport::Context& context, size_t bytes);
  ~RegisteredBuffer();
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  transport::MemoryRegion& region() const { return *region_; }

 private:
  RegisteredBuffer(uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t* data_;
  size_t size_;
  std::unique_ptr<transport::MemoryRegion> region_;
};

}  // namespace poseidon::perf
