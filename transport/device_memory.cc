#include "transport/device_memory.h"

#ifdef POSEIDON_TRANSPORT_CUDA
#include "transport/cuda/cuda_device_memory.h"
#endif

namespace poseidon::transport {
namespace {

// A build without an accelerator runtime: no pointer can be device memory, so nothing here is
// ever asked to stage or export.
class HostOnlyMemory final : public DeviceMemory {
 public:
  const char* name() const override { return "none"; }
  Result<bool> isDeviceMemory(const void*, size_t) override { return false; }
  Result<void*> allocatePinnedHost(size_t length) override {
    return makeStatus(StatusCode::kUnavailable, "cannot allocate {} bytes of pinned host memory: built without CUDA",
                      length);
  }
  void freePinnedHost(void*) override {}
  Status copyToHost(void*, const void* device, size_t length) override {
    return unavailable("copy from", device, length);
  }
  Status copyToDevice(void* device, const void*, size_t length) override {
    return unavailable("copy to", device, length);
  }
  Result<DmabufRange> exportDmabuf(const void* data, size_t length) override {
    return unavailable("export", data, length);
  }

 private:
  static Status unavailable(const char* what, const void* data, size_t length) {
    return makeStatus(StatusCode::kUnavailable, "cannot {} device memory {} ({} bytes): built without CUDA", what, data,
                      length);
  }
};

}  // namespace

std::shared_ptr<DeviceMemory> builtinDeviceMemory() {
#ifdef POSEIDON_TRANSPORT_CUDA
  return cuda::cudaDeviceMemory();
#else
  static const auto instance = std::make_shared<HostOnlyMemory>();
  return instance;
#endif
}

}  // namespace poseidon::transport
