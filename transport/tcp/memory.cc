#include "transport/tcp/memory.h"

#include "transport/common/host_staging.h"

namespace poseidon::transport::tcp {

Result<std::unique_ptr<TcpMemoryRegion>> TcpMemoryRegion::create(void* data, size_t size,
                                                                 const std::shared_ptr<DeviceMemory>& runtime,
                                                                 std::shared_ptr<RegionRegistry> registry) {
  auto device = runtime->isDeviceMemory(data, size);
  if (!device) return device.status();
  std::unique_ptr<HostStaging> staging;
  if (*device) {
    auto created = HostStaging::create(runtime, data, size);
    if (!created) return created.status();
    staging = std::move(*created);
  }
  return std::unique_ptr<TcpMemoryRegion>(new TcpMemoryRegion(data, size, std::move(staging), std::move(registry)));
}

TcpMemoryRegion::TcpMemoryRegion(void* data, size_t size, std::unique_ptr<HostStaging> staging,
                                 std::shared_ptr<RegionRegistry> registry)
    : MemoryRegion(data, size, std::move(staging)), registry_(std::move(registry)), key_(registry_->add(this)) {}

TcpMemoryRegion::~TcpMemoryRegion() { registry_->remove(key_); }

RemoteDescriptor TcpMemoryRegion::remote() const {
  RemoteDescriptor d;
  d.backend = BackendTag::kTcp;
  d.key = key_;
  d.address = 0;  // TCP writes name offsets, never addresses
  d.length = size();
  // Said for completeness: TCP writers need not act on it, every frame names its range anyway.
  d.staged = staged();
  return d;
}

}  // namespace poseidon::transport::tcp
