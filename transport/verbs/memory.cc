#include "transport/verbs/memory.h"

#include <cerrno>
#include <cstring>

namespace poseidon::transport::verbs {

Result<std::unique_ptr<VerbsMemoryRegion>> VerbsMemoryRegion::create(ibv_pd* pd, void* data, size_t size,
                                                                     int access) {
  if (size == 0) return std::unique_ptr<VerbsMemoryRegion>(new VerbsMemoryRegion(data, 0, nullptr));
  ibv_mr* mr = ibv_reg_mr(pd, data, size, access);
  if (mr == nullptr) {
    const int err = errno;
    return makeStatus(StatusCode::kIoError,
                      "ibv_reg_mr of {} bytes at {} failed: {}{}", size, data, std::strerror(err),
                      err == ENOMEM || err == EPERM ? " (is the locked-memory limit, ulimit -l, too low?)" : "");
  }
  return std::unique_ptr<VerbsMemoryRegion>(new VerbsMemoryRegion(data, size, mr));
}

VerbsMemoryRegion::~VerbsMemoryRegion() {
  if (mr_) ibv_dereg_mr(mr_);
}

RemoteDescriptor VerbsMemoryRegion::remote() const {
  RemoteDescriptor d;
  d.backend = BackendTag::kVerbs;
  d.key = rkey();
  d.address = reinterpret_cast<uint64_t>(data());
  d.length = size();
  return d;
}

}  // namespace poseidon::transport::verbs
