#include "transport/common/region_registry.h"

namespace poseidon::transport {

uint32_t RegionRegistry::add(MemoryRegion* region) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint32_t key = next_key_++;
  regions_[key] = std::make_shared<RegionEntry>(region);
  return key;
}

void RegionRegistry::insert(uint32_t key, MemoryRegion* region) {
  std::lock_guard<std::mutex> lock(mutex_);
  regions_[key] = std::make_shared<RegionEntry>(region);
}

void RegionRegistry::remove(uint32_t key) {
  std::shared_ptr<RegionEntry> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = regions_.find(key);
    if (it == regions_.end()) return;
    entry = std::move(it->second);
    regions_.erase(it);
  }
  // Outside the registry's lock: a use in progress delays this removal only.
  entry->retire();
}

std::shared_ptr<RegionEntry> RegionRegistry::find(uint32_t key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = regions_.find(key);
  return it == regions_.end() ? nullptr : it->second;
}

}  // namespace poseidon::transport
