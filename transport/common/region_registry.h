// RegionRegistry: registered regions by key, for finding the region a peer's write names.
//
// TCP gives each region a key of its own (add); verbs files staged regions under the rkey the
// device gave them (insert), to copy a write's range to the device when its notice arrives.
// Shared by a context (or device) and its regions, so either may be destroyed first.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "transport/memory.h"

namespace poseidon::transport {

class RegionRegistry {
 public:
  // Files `region` under a fresh key and returns it.
  uint32_t add(MemoryRegion* region);
  // Files `region` under `key`, which must not be in use.
  void insert(uint32_t key, MemoryRegion* region);
  void remove(uint32_t key);
  MemoryRegion* find(uint32_t key) const;

 private:
  mutable std::mutex mutex_;
  uint32_t next_key_ = 1;
  std::map<uint32_t, MemoryRegion*> regions_;
};

}  // namespace poseidon::transport
