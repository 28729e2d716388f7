// Verbs registration: ibv_reg_mr pins the range and yields the lkey our work requests use and
// the rkey a peer needs to RDMA-write into it.
#pragma once

#include <infiniband/verbs.h>

#include "transport/memory.h"

namespace poseidon::transport::verbs {

class VerbsMemoryRegion final : public MemoryRegion {
 public:
  // Registers [data, data + size) in pd; a zero-length region needs no registration.
  static Result<std::unique_ptr<VerbsMemoryRegion>> create(ibv_pd* pd, void* data, size_t size, int access);
  ~VerbsMemoryRegion() override;
  RemoteDescriptor remote() const override;
  uint32_t lkey() const { return mr_ ? mr_->lkey : 0; }
  uint32_t rkey() const { return mr_ ? mr_->rkey : 0; }

 private:
  VerbsMemoryRegion(void* data, size_t size, ibv_mr* mr) : MemoryRegion(data, size), mr_(mr) {}
  ibv_mr* mr_;
};

// The registered region behind a slice, or null when it belongs to another backend.
inline const VerbsMemoryRegion* asVerbs(const MemoryRegion* region) {
  return dynamic_cast<const VerbsMemoryRegion*>(region);
}

}  // namespace poseidon::transport::verbs
