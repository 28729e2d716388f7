#include "tests/kernels/cuda_support.h"

#include <cstring>
#include <utility>

namespace poseidon::kernels {

std::string whyNoDevice() {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(err) + ")";
  if (devices == 0) return "no CUDA device (cudaGetDeviceCount: 0 devices)";
  return {};
}

DeviceBuffer::DeviceBuffer(const void* host, size_t bytes) {
  if (cudaMalloc(&pointer_, bytes == 0 ? 1 : bytes) != cudaSuccess) {
    pointer_ = nullptr;
    return;
  }
  if (bytes > 0 && cudaMemcpy(pointer_, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    cudaFree(pointer_);
    pointer_ = nullptr;
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_ != nullptr) cudaFree(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : pointer_(std::exchange(other.pointer_, nullptr)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(pointer_, other.pointer_);
  return *this;
}

::testing::AssertionResult sameBits(const void* device, const void* host, size_t bytes, const std::string& name) {
  std::vector<unsigned char> copy(bytes);
  if (const cudaError_t err = cudaMemcpy(copy.data(), device, bytes, cudaMemcpyDeviceToHost); err != cudaSuccess) {
    return ::testing::AssertionFailure() << name << ": copy back failed: " << cudaGetErrorString(err);
  }
  const auto* want = static_cast<const unsigned char*>(host);
  for (size_t b = 0; b < bytes; ++b) {
    if (copy[b] != want[b]) {
      return ::testing::AssertionFailure()
             << name << ": byte " << b << " (element " << b / 4 << " as float) differs, GPU "
             << static_cast<int>(copy[b]) << ", CPU " << static_cast<int>(want[b]);
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace poseidon::kernels
