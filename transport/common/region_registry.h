// RegionRegistry: registered regions by key, for finding the region a peer's write names.
//
// TCP gives each region a key of its own (add); verbs files staged regions under the rkey the
// device gave them (insert), to copy a write's range to the device when its notice arrives.
// Shared by a context (or device) and its regions, so either may be destroyed first.
//
// A peer's write can be arriving while its target region is destroyed (a collective that timed
// out, a job torn down). Like ibv_dereg_mr, removal must leave no access behind: whoever touches
// a region's memory on a peer's behalf does it inside RegionEntry::use, and remove() waits for a
// use in progress and makes every later one fail, so once a region's destructor has returned no
// byte of it is read or written.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "transport/memory.h"

namespace poseidon::transport {

class RegionEntry {
 public:
  explicit RegionEntry(MemoryRegion* region) : region_(region) {}

  // Calls fn(region) with the region kept alive and returns true; false, without calling it, once
  // the region was removed.
  template <typename Fn>
  bool use(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (region_ == nullptr) return false;
    fn(*region_);
    return true;
  }

  // Waits for a use in progress; every later use fails.
  void retire() {
    std::lock_guard<std::mutex> lock(mutex_);
    region_ = nullptr;
  }

 private:
  std::mutex mutex_;
  MemoryRegion* region_;
};

class RegionRegistry {
 public:
  // Files `region` under a fresh key and returns it.
  uint32_t add(MemoryRegion* region);
  // Files `region` under `key`, which must not be in use.
  void insert(uint32_t key, MemoryRegion* region);
  // Unfiles the region under `key` and retires its entry (see above): call it before the region's
  // memory goes away.
  void remove(uint32_t key);
  // The entry filed under `key`, or null.
  std::shared_ptr<RegionEntry> find(uint32_t key) const;

 private:
  mutable std::mutex mutex_;
  uint32_t next_key_ = 1;
  std::map<uint32_t, std::shared_ptr<RegionEntry>> regions_;
};

}  // namespace poseidon::transport
