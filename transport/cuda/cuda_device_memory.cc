#include "transport/cuda/cuda_device_memory.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <mutex>

namespace poseidon::transport::cuda {
namespace {

// The runtime is linked statically (libcudart_static), which loads the driver (libcuda.so.1) only
// on the first call and reports its absence as an error code: a process on a machine without a
// GPU or driver starts and runs, and learns here that no pointer can be device memory.
bool cudaCannotRunHere(cudaError_t error) {
  switch (error) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorSystemNotReady:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInitializationError: return true;
    default: return false;
  }
}

// "cudaErrorInvalidValue (invalid argument)". Also clears the runtime's last error, so a caller
// that checks cudaGetLastError() later does not see ours.
std::string describe(cudaError_t error) {
  cudaGetLastError();
  return fmt::format("{} ({})", cudaGetErrorName(error), cudaGetErrorString(error));
}

// cuMemGetHandleForAddressRange is a driver API call; the runtime hands out the driver's entry
// point, so the library never links libcuda (absent where there is no driver).
// (In a struct: a Result of a bare function pointer trips -Wshadow on Result's value().)
struct GetHandleForAddressRange {
  CUresult (*call)(void* handle, CUdeviceptr dptr, size_t size, CUmemRangeHandleType type, unsigned long long flags);
};

Result<GetHandleForAddressRange> getHandleEntryPoint() {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  // 11.7 is the first CUDA with the call; its signature has not changed since.
  const cudaError_t error =
      cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &function, 11070, cudaEnableDefault, &found);
  if (error != cudaSuccess || found != cudaDriverEntryPointSuccess || function == nullptr) {
    return makeStatus(StatusCode::kUnavailable, "the driver has no cuMemGetHandleForAddressRange ({}, query result {})",
                      error == cudaSuccess ? "found no symbol" : describe(error), static_cast<int>(found));
  }
  return GetHandleForAddressRange{reinterpret_cast<decltype(GetHandleForAddressRange::call)>(function)};
}

class CudaDeviceMemory final : public DeviceMemory {
 public:
  const char* name() const override { return "cuda"; }

  Result<bool> isDeviceMemory(const void* data, size_t length) override {
    cudaPointerAttributes attributes{};
    const cudaError_t error = cudaPointerGetAttributes(&attributes, data);
    if (cudaCannotRunHere(error)) {
      cudaGetLastError();
      return false;
    }
    // Runtimes before 11.0 refused pointers they did not allocate or register: host memory.
    if (error == cudaErrorInvalidValue) {
      cudaGetLastError();
      return false;
    }
    if (error != cudaSuccess) {
      return makeStatus(StatusCode::kIoError, "cudaPointerGetAttributes of {} ({} bytes) failed: {}", data, length,
                        describe(error));
    }
    // Managed memory is host-addressable and pinned/registered host memory is host memory: the
    // CPU and the NIC reach both as they are.
    return attributes.type == cudaMemoryTypeDevice;
  }

  Result<void*> allocatePinnedHost(size_t length) override {
    void* host = nullptr;
    // Portable: the staging copies may run with any device current, on any thread.
    const cudaError_t error = cudaHostAlloc(&host, length, cudaHostAllocPortable);
    if (error != cudaSuccess) {
      return makeStatus(StatusCode::kIoError, "cudaHostAlloc of {} bytes of pinned host memory failed: {}", length,
                        describe(error));
    }
    return host;
  }

  void freePinnedHost(void* host) override {
    if (host != nullptr) cudaFreeHost(host);
  }

  Status copyToHost(void* host, const void* device, size_t length) override {
    return copy(host, device, length, cudaMemcpyDeviceToHost, "from device memory", device);
  }

  Status copyToDevice(void* device, const void* host, size_t length) override {
    return copy(device, host, length, cudaMemcpyHostToDevice, "into device memory", device);
  }

  Result<DmabufRange> exportDmabuf(const void* data, size_t length) override {
    std::call_once(entry_once_, [&] { get_handle_ = getHandleEntryPoint(); });
    if (!get_handle_) return get_handle_.status();
    // The driver exports whole host pages; the range starts `offset` into the first one.
    const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto address = reinterpret_cast<uint64_t>(data);
    const uint64_t base = address & ~(page - 1);
    const uint64_t end = (address + length + page - 1) & ~(page - 1);
    int fd = -1;
    const CUresult result =
        get_handle_->call(&fd, static_cast<CUdeviceptr>(base), end - base, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (result != CUDA_SUCCESS) {
      return makeStatus(StatusCode::kUnavailable,
                        "cuMemGetHandleForAddressRange(DMA_BUF_FD) of {} ({} bytes, pages [0x{:x}, 0x{:x})) failed "
                        "with CUresult {}{}",
                        data, length, base, end, static_cast<int>(result),
                        result == CUDA_ERROR_NOT_SUPPORTED ? " (not supported: this GPU, driver or kernel has no "
                                                             "dma-buf export)"
                                                           : "");
    }
    return DmabufRange{Fd(fd), address - base};
  }

 private:
  static Status copy(void* to, const void* from, size_t length, cudaMemcpyKind kind, const char* direction,
                     const void* device) {
    if (length == 0) return Status::ok();
    const cudaError_t error = cudaMemcpy(to, from, length, kind);
    if (error != cudaSuccess) {
      return makeStatus(StatusCode::kIoError, "staging copy of {} bytes {} {} failed: {}", length, direction, device,
                        describe(error));
    }
    return Status::ok();
  }

  std::once_flag entry_once_;
  Result<GetHandleForAddressRange> get_handle_ =
      Status(StatusCode::kInternal, "cuMemGetHandleForAddressRange not looked up yet");
};

}  // namespace

std::shared_ptr<DeviceMemory> cudaDeviceMemory() {
  static const auto instance = std::make_shared<CudaDeviceMemory>();
  return instance;
}

}  // namespace poseidon::transport::cuda
