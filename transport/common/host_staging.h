// HostStaging: the pinned host copy that stands in for device memory the NIC cannot reach.
//
// A backend registers host() instead of the device range and moves bytes only there. Before the
// wire reads a range (send, the local side of a write) toHost() copies it from the device; after
// the wire wrote a range (a receive, a peer's write) toDevice() copies it back, before the
// request or the immediate that reports it completes. Each copy covers only the range moved, is
// synchronous, and runs on the calling thread: sends and writes stage on the caller's thread,
// arrivals on the backend's progress engine. Both backends use it; TCP has no other way to
// reach device memory, verbs only where dma-buf registration is unavailable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "transport/device_memory.h"

namespace poseidon::transport {

class HostStaging {
 public:
  // Pinned host memory for the device range [device, device + length).
  static Result<std::unique_ptr<HostStaging>> create(std::shared_ptr<DeviceMemory> runtime, void* device,
                                                     size_t length);
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  uint8_t* host() const { return host_; }
  uint8_t* device() const { return device_; }
  size_t size() const { return size_; }

  // [offset, offset + length) of the region, which the caller checked lies inside it.
  Status toHost(uint64_t offset, uint64_t length) const;
  Status toDevice(uint64_t offset, uint64_t length) const;

 private:
  HostStaging(std::shared_ptr<DeviceMemory> runtime, uint8_t* device, uint8_t* host, size_t size)
      : runtime_(std::move(runtime)), device_(device), host_(host), size_(size) {}

  std::shared_ptr<DeviceMemory> runtime_;
  uint8_t* device_;
  uint8_t* host_;
  size_t size_;
};

}  // namespace poseidon::transport
