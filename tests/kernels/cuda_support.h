// What the GPU suites share: why a test must skip, device buffers, and byte-for-byte comparison
// with the CPU twin's result.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace poseidon::kernels {

#define ASSERT_CUDA(call)                                                      \
  do {                                                                         \
    const cudaError_t _err = (call);                                           \
    ASSERT_EQ(_err, cudaSuccess) << #call << ": " << cudaGetErrorString(_err); \
  } while (0)

// Empty when a device is there; else why not, for GTEST_SKIP.
std::string whyNoDevice();

// Device memory holding a copy of host bytes; empty (get() == nullptr) if allocation or the copy
// failed.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const void* host, size_t bytes);
  template <typename T>
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.data(), host.size() * sizeof(T)) {}
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  void* get() const { return pointer_; }
  float* floats() const { return static_cast<float*>(pointer_); }
  explicit operator bool() const { return pointer_ != nullptr; }

 private:
  void* pointer_ = nullptr;
};

// Success when the `bytes` at `device` equal those at `host`; else the first differing float
// (byte offset / 4) of `name`.
::testing::AssertionResult sameBits(const void* device, const void* host, size_t bytes, const std::string& name);

}  // namespace poseidon::kernels
