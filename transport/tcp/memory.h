// TCP registration: memory needs no pinning; a region is a key peers name in write frames.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "transport/memory.h"

namespace poseidon::transport::tcp {

// The regions of one context, looked up by key when a write frame arrives. Shared by the
// context and its regions so either may be destroyed first.
class RegionRegistry {
 public:
  uint32_t add(MemoryRegion* region);
  void remove(uint32_t key);
  MemoryRegion* find(uint32_t key) const;

 private:
  mutable std::mutex mutex_;
  uint32_t next_key_ = 1;
  std::map<uint32_t, MemoryRegion*> regions_;
};

class TcpMemoryRegion final : public MemoryRegion {
 public:
  TcpMemoryRegion(void* data, size_t size, std::shared_ptr<RegionRegistry> registry);
  ~TcpMemoryRegion() override;
  RemoteDescriptor remote() const override;
  uint32_t key() const { return key_; }

 private:
  std::shared_ptr<RegionRegistry> registry_;
  uint32_t key_;
};

}  // namespace poseidon::transport::tcp
