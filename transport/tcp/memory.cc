#include "transport/tcp/memory.h"

namespace poseidon::transport::tcp {

uint32_t RegionRegistry::add(MemoryRegion* region) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint32_t key = next_key_++;
  regions_[key] = region;
  return key;
}

void RegionRegistry::remove(uint32_t key) {
  std::lock_guard<std::mutex> lock(mutex_);
  regions_.erase(key);
}

MemoryRegion* RegionRegistry::find(uint32_t key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = regions_.find(key);
  return it == regions_.end() ? nullptr : it->second;
}

TcpMemoryRegion::TcpMemoryRegion(void* data, size_t size, std::shared_ptr<RegionRegistry> registry)
    : MemoryRegion(data, size), registry_(std::move(registry)), key_(registry_->add(this)) {}

TcpMemoryRegion::~TcpMemoryRegion() { registry_->remove(key_); }

RemoteDescriptor TcpMemoryRegion::remote() const {
  RemoteDescriptor d;
  d.backend = BackendTag::kTcp;
  d.key = key_;
  d.address = 0;  // TCP writes name offsets, never addresses
  d.length = size();
  return d;
}

}  // namespace poseidon::transport::tcp
