// TCP registration: memory needs no pinning; a region is a key peers name in write frames.
// Device memory (device_memory.h) can only be reached through host staging: the streams read
// and fill the pinned host copy, and the pair copies each range to or from the device.
#pragma once

#include <cstdint>
#include <memory>

#include "transport/common/region_registry.h"
#include "transport/device_memory.h"

namespace poseidon::transport::tcp {

class TcpMemoryRegion final : public MemoryRegion {
 public:
  // Host memory is used as it is; device memory gets a host staging copy.
  static Result<std::unique_ptr<TcpMemoryRegion>> create(void* data, size_t size,
                                                         const std::shared_ptr<DeviceMemory>& runtime,
                                                         std::shared_ptr<RegionRegistry> registry);
  ~TcpMemoryRegion() override;
  RemoteDescriptor remote() const override;
  uint32_t key() const { return key_; }

 private:
  TcpMemoryRegion(void* data, size_t size, std::unique_ptr<HostStaging> staging,
                  std::shared_ptr<RegionRegistry> registry);

  std::shared_ptr<RegionRegistry> registry_;
  uint32_t key_;
};

}  // namespace poseidon::transport::tcp
