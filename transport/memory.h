// Registered memory: the local handle and the descriptor a peer needs to write into it.
//
// Buffers that travel are registered once, at set-up, and reused every iteration. The remote
// descriptor is opaque bytes a peer receives (through any channel) and passes to Pair::write.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "transport/status.h"

namespace poseidon::transport {

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

  std::array<uint8_t, kEncodedSize> serialize() const;
  // Validates magic, version, backend and sizes; names what is wrong.
  static Result<RemoteDescriptor> parse(std::span<const uint8_t> bytes);
};

// A registered local range. Created by Context::registerMemory; deregistered when destroyed,
// which must happen only after no request and no peer uses it any more.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  virtual RemoteDescriptor remote() const = 0;

  // True when [offset, offset + length) lies inside the region (overflow-safe).
  bool contains(uint64_t offset, uint64_t length) const { return offset <= size_ && length <= size_ - offset; }

 protected:
  MemoryRegion(void* data, size_t size) : data_(static_cast<uint8_t*>(data)), size_(size) {}

 private:
  uint8_t* data_;
  size_t size_;
};

}  // namespace poseidon::transport
