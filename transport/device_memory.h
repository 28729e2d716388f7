// DeviceMemory: what registration needs to know about accelerator (GPU) memory.
//
// Context::registerMemory takes any pointer. For each one the backend asks: is this device
// memory the CPU cannot address? Host memory (pageable, pinned or managed) is registered as it
// is. Device memory is registered either directly, where the NIC can reach it through a dma-buf
// (verbs only: ibv_reg_dmabuf_mr), or through host staging: a pinned host copy is registered
// instead, filled from the device before the wire reads it and copied back after the wire wrote
// it (host_staging.h).
//
// Which runtime answers is a build choice: with CUDA (POSEIDON_HAVE_CUDA) the CUDA runtime,
// linked statically so nothing is loaded that a machine without a GPU lacks; a machine without a
// device or driver makes it answer "host memory" for every pointer. Without CUDA every pointer
// is host memory. Tests substitute their own (DeviceOptions::device_memory) to run the staging
// paths where no GPU exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/status.h"
#include "transport/common/fd.h"

namespace poseidon::transport {

// A dma-buf that covers a device range: `offset` is where the range starts inside it.
struct DmabufRange {
  Fd fd;
  uint64_t offset = 0;
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;

  // "cuda", "none": for logs.
  virtual const char* name() const = 0;
  // True for device memory the CPU cannot address; false for host memory of any kind, and for
  // every pointer where the runtime cannot run (no device, no driver). An error only when the
  // runtime works and cannot classify the pointer.
  virtual Result<bool> isDeviceMemory(const void* data, size_t length) = 0;

  // Page-locked host memory for staging; freed with freePinnedHost.
  virtual Result<void*> allocatePinnedHost(size_t length) = 0;
  virtual void freePinnedHost(void* host) = 0;
  // Synchronous copies: when they return, the destination holds the bytes.
  virtual Status copyToHost(void* host, const void* device, size_t length) = 0;
  virtual Status copyToDevice(void* device, const void* host, size_t length) = 0;

  // A dma-buf of the device range [data, data + length), for ibv_reg_dmabuf_mr; kUnavailable
  // when the device, driver or runtime cannot export one (the caller then stages).
  virtual Result<DmabufRange> exportDmabuf(const void* data, size_t length) = 0;
};

// The runtime this build was made with (see above); one instance per process.
std::shared_ptr<DeviceMemory> builtinDeviceMemory();

}  // namespace poseidon::transport
