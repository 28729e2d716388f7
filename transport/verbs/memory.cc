#include "transport/verbs/memory.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "transport/common/host_staging.h"

namespace poseidon::transport::verbs {
namespace {

// `what` names the memory for the error: "4096 bytes at 0x7f..." or the staging copy of a device range.
Result<ibv_mr*> registerHostMemory(ibv_pd* pd, void* data, size_t size, int access, const std::string& what) {
  ibv_mr* mr = ibv_reg_mr(pd, data, size, access);
  if (mr == nullptr) {
    const int err = errno;
    return makeStatus(StatusCode::kIoError, "ibv_reg_mr of {} failed: {}{}", what, std::strerror(err),
                      err == ENOMEM || err == EPERM ? " (is the locked-memory limit, ulimit -l, too low?)" : "");
  }
  return mr;
}

// The NIC reaches the device range through a dma-buf; the MR's addresses are the device
// pointers themselves (iova = data), so work requests and peers use them as for host memory.
Result<ibv_mr*> registerDmabuf(ibv_pd* pd, void* data, size_t size, int access, DeviceMemory& runtime) {
  auto dmabuf = runtime.exportDmabuf(data, size);
  if (!dmabuf) return dmabuf.status();
  ibv_mr* mr = ibv_reg_dmabuf_mr(pd, dmabuf->offset, size, reinterpret_cast<uint64_t>(data), dmabuf->fd.get(), access);
  if (mr == nullptr) {
    const int err = errno;
    return makeStatus(
        StatusCode::kUnavailable, "ibv_reg_dmabuf_mr of device memory {} ({} bytes) failed: {}{}", data, size,
        std::strerror(err),
        err == EOPNOTSUPP || err == EPROTONOSUPPORT ? " (this RDMA device does not import dma-bufs)" : "");
  }
  // The MR holds its own reference to the dma-buf; our descriptor closes with `dmabuf`.
  return mr;
}

}  // namespace

Result<std::unique_ptr<VerbsMemoryRegion>> VerbsMemoryRegion::create(ibv_pd* pd, void* data, size_t size, int access) {
  if (size == 0) return std::unique_ptr<VerbsMemoryRegion>(new VerbsMemoryRegion(data, 0, nullptr));
  auto mr = registerHostMemory(pd, data, size, access, fmt::format("{} bytes at {}", size, data));
  if (!mr) return mr.status();
  return std::unique_ptr<VerbsMemoryRegion>(new VerbsMemoryRegion(data, size, *mr));
}

Result<std::unique_ptr<VerbsMemoryRegion>> VerbsMemoryRegion::create(ibv_pd* pd, void* data, size_t size, int access,
                                                                     const std::shared_ptr<DeviceMemory>& runtime,
                                                                     std::shared_ptr<RegionRegistry> staged_regions) {
  if (size == 0) return create(pd, data, size, access);
  auto device = runtime->isDeviceMemory(data, size);
  if (!device) return device.status();
  if (!*device) return create(pd, data, size, access);

  auto direct = registerDmabuf(pd, data, size, access, *runtime);
  if (direct) {
    spdlog::info("transport: device memory {} ({} bytes) registered through dma-buf", data, size);
    return std::unique_ptr<VerbsMemoryRegion>(new VerbsMemoryRegion(data, size, *direct));
  }
  spdlog::info("transport: device memory {} ({} bytes) goes through host staging: {}", data, size,
               direct.status().message());
  auto staging = HostStaging::create(runtime, data, size);
  if (!staging) return staging.status();
  auto mr = registerHostMemory(pd, (*staging)->host(), size, access,
                               fmt::format("the host staging copy ({} bytes at {}) of device memory {}", size,
                                           fmt::ptr((*staging)->host()), data));
  if (!mr) return mr.status();
  return std::unique_ptr<VerbsMemoryRegion>(
      new VerbsMemoryRegion(data, size, *mr, std::move(*staging), std::move(staged_regions)));
}

VerbsMemoryRegion::VerbsMemoryRegion(void* data, size_t size, ibv_mr* mr, std::unique_ptr<HostStaging> staging,
                                     std::shared_ptr<RegionRegistry> staged_regions)
    : MemoryRegion(data, size, std::move(staging)), mr_(mr), staged_regions_(std::move(staged_regions)) {
  staged_regions_->insert(mr_->rkey, this);
}

VerbsMemoryRegion::~VerbsMemoryRegion() {
  if (staged_regions_) staged_regions_->remove(mr_->rkey);
  if (mr_) ibv_dereg_mr(mr_);
}

RemoteDescriptor VerbsMemoryRegion::remote() const {
  RemoteDescriptor d;
  d.backend = BackendTag::kVerbs;
  d.key = rkey();
  d.address = reinterpret_cast<uint64_t>(wire());  // where the MR is, staging copy or not
  d.length = size();
  d.staged = staged();
  return d;
}

}  // namespace poseidon::transport::verbs
