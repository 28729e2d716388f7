#include "transport/common/host_staging.h"

namespace poseidon::transport {

Result<std::unique_ptr<HostStaging>> HostStaging::create(std::shared_ptr<DeviceMemory> runtime, void* device,
                                                         size_t length) {
  // A zero-length region moves nothing; it still gets a (one-byte) buffer so host() is never null.
  auto host = runtime->allocatePinnedHost(length == 0 ? 1 : length);
  if (!host) {
    return host.status().withContext(fmt::format("host staging for device memory {} ({} bytes)", device, length));
  }
  return std::unique_ptr<HostStaging>(
      new HostStaging(std::move(runtime), static_cast<uint8_t*>(device), static_cast<uint8_t*>(*host), length));
}

HostStaging::~HostStaging() { runtime_->freePinnedHost(host_); }

Status HostStaging::toHost(uint64_t offset, uint64_t length) const {
  return runtime_->copyToHost(host_ + offset, device_ + offset, length);
}

Status HostStaging::toDevice(uint64_t offset, uint64_t length) const {
  return runtime_->copyToDevice(device_ + offset, host_ + offset, length);
}

}  // namespace poseidon::transport
