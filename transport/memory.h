// Registered memory: the local handle and the descriptor a peer needs to write into it.
//
// Buffers that travel are registered once, at set-up, and reused every iteration. The remote
// descriptor is opaque bytes a peer receives (through any channel) and passes to Pair::write.
// A region may be GPU memory (device_memory.h): the backend then moves its bytes either straight
// (verbs with dma-buf) or through a pinned host copy (host_staging.h); the caller sees no
// difference but the cost.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/status.h"

namespace poseidon::transport {

class HostStaging;

enum class BackendTag : uint8_t { kTcp = 1, kVerbs = 2 };
const char* backendName(BackendTag tag);

// What a peer needs to write into a region: backend, key, the region's base address as the
// owner sees it (verbs needs it; TCP uses offsets) and its length.
struct RemoteDescriptor {
  static constexpr size_t kEncodedSize = 32;

  BackendTag backend = BackendTag::kTcp;
  uint32_t key = 0;
  uint64_t address = 0;
  uint64_t length = 0;
  // The region is device memory behind host staging: its owner must learn the range of every
  // write to copy it to the device (TCP frames always name it; verbs then follows the data with
  // a notice naming it).
  bool staged = false;

  std::array<uint8_t, kEncodedSize> serialize() const;
  // Validates magic, version, backend and sizes; names what is wrong.
  static Result<RemoteDescriptor> parse(std::span<const uint8_t> bytes);
};

// A registered local range. Created by Context::registerMemory; deregistered when destroyed,
// which must happen only after no request and no peer uses it any more.
class MemoryRegion {
 public:
  virtual ~MemoryRegion();
  // The caller's memory, as registered (host or device memory).
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  virtual RemoteDescriptor remote() const = 0;

  // True when [offset, offset + length) lies inside the region (overflow-safe).
  bool contains(uint64_t offset, uint64_t length) const { return offset <= size_ && length <= size_ - offset; }

  // Backends: where this region's bytes travel from and land. data() itself, except for device
  // memory registered through host staging, where it is the pinned host copy.
  uint8_t* wire() const { return wire_; }
  bool staged() const { return staging_ != nullptr; }
  // For a staged region, copy [offset, offset + length) device -> host before the wire reads it,
  // or host -> device after the wire wrote it; nothing to do (OK) otherwise.
  Status stageOut(uint64_t offset, uint64_t length) const;
  Status stageIn(uint64_t offset, uint64_t length) const;

 protected:
  MemoryRegion(void* data, size_t size);
  // Device memory behind `staging`, the host copy the backend registered in its place.
  MemoryRegion(void* data, size_t size, std::unique_ptr<HostStaging> staging);

 private:
  uint8_t* data_;
  size_t size_;
  std::unique_ptr<HostStaging> staging_;
  uint8_t* wire_;
};

}  // namespace poseidon::transport
