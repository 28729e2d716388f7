// Verbs registration: the region's memory is registered in the protection domain, yielding the
// lkey our work requests use and the rkey a peer needs to RDMA-write into it.
//
// Host memory: ibv_reg_mr pins the range. Device memory (device_memory.h): exported as a dma-buf
// and registered with ibv_reg_dmabuf_mr, so the NIC reads and writes GPU memory directly (needs
// a GPU, driver and kernel with dma-buf export and an RDMA driver that imports it); where any of
// that is missing, a pinned host copy is registered instead (host_staging.h) and the region is
// staged: the pair copies each range moved, and peers' writes into it are followed by a notice
// naming their range (control.h), found through the device's staged-region registry.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "transport/common/region_registry.h"
#include "transport/device_memory.h"
#include "transport/memory.h"

namespace poseidon::transport::verbs {

class VerbsMemoryRegion final : public MemoryRegion {
 public:
  // Host memory only (the pair's control rings). A zero-length region needs no registration.
  static Result<std::unique_ptr<VerbsMemoryRegion>> create(ibv_pd* pd, void* data, size_t size, int access);
  // Memory a caller registers, host or device; a staged region files itself in `staged_regions`
  // under its rkey.
  static Result<std::unique_ptr<VerbsMemoryRegion>> create(ibv_pd* pd, void* data, size_t size, int access,
                                                           const std::shared_ptr<DeviceMemory>& runtime,
                                                           std::shared_ptr<RegionRegistry> staged_regions);
  ~VerbsMemoryRegion() override;
  RemoteDescriptor remote() const override;
  uint32_t lkey() const { return mr_ ? mr_->lkey : 0; }
  uint32_t rkey() const { return mr_ ? mr_->rkey : 0; }

 private:
  VerbsMemoryRegion(void* data, size_t size, ibv_mr* mr) : MemoryRegion(data, size), mr_(mr) {}
  VerbsMemoryRegion(void* data, size_t size, ibv_mr* mr, std::unique_ptr<HostStaging> staging,
                    std::shared_ptr<RegionRegistry> staged_regions);

  ibv_mr* mr_;
  std::shared_ptr<RegionRegistry> staged_regions_;  // set for staged regions only
};

// The registered region behind a slice, or null when it belongs to another backend.
inline const VerbsMemoryRegion* asVerbs(const MemoryRegion* region) {
  return dynamic_cast<const VerbsMemoryRegion*>(region);
}

}  // namespace poseidon::transport::verbs
