// DeviceMemory: FloatMemory in the current CUDA device's global memory, its copies ordered on one
// stream (the GpuContext's), so they fall in line with the layers' kernels on that stream.
//
// upload and copy return once enqueued (a pageable host source is staged before the call
// returns, so it may be reused); download waits for the stream, since its caller reads the host
// copy next. allocate zeroes the block on the stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "trainer/reference/float_memory.h"

namespace poseidon::trainer::reference {

class DeviceMemory final : public FloatMemory {
 public:
  explicit DeviceMemory(cudaStream_t stream) : stream_(stream) {}

  const char* name() const override { return "CUDA device"; }
  kernels::Place place() const override { return kernels::Place::cuda(stream_); }
  Result<FloatBlock> allocate(size_t n) const override;
  Status upload(std::span<const float> host, std::span<float> to) const override;
  Status copy(std::span<const float> from, std::span<float> to) const override;
  Status download(std::span<const float> from, std::span<float> host) const override;

 private:
  cudaStream_t stream_;
};

// Untyped device memory for what is not floats (argmax indices, labels, per-sample losses): freed
// on destruction, move-only.
class DeviceBytes {
 public:
  DeviceBytes() = default;
  // Fails, naming `what` and the size, when the device cannot give them.
  static Result<DeviceBytes> allocate(size_t bytes, const std::string& what);
  ~DeviceBytes();
  DeviceBytes(DeviceBytes&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  DeviceBytes& operator=(DeviceBytes&& other) noexcept {
    std::swap(data_, other.data_);
    return *this;
  }

  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  explicit DeviceBytes(void* data) : data_(data) {}
  void* data_ = nullptr;
};

}  // namespace poseidon::trainer::reference
