#include "trainer/reference/cuda/device_memory_cuda.h"

#include <fmt/format.h>

#include "trainer/reference/cuda/cuda_status.h"

namespace poseidon::trainer::reference {

Result<FloatBlock> DeviceMemory::allocate(size_t n) const {
  void* data = nullptr;
  const size_t bytes = (n == 0 ? 1 : n) * sizeof(float);
  POSEIDON_RETURN_IF_ERROR(cudaCheck(cudaMalloc(&data, bytes), fmt::format("cudaMalloc of {} floats", n)));
  FloatBlock block(static_cast<float*>(data), n, [](float* p) { static_cast<void>(cudaFree(p)); });
  POSEIDON_RETURN_IF_ERROR(
      cudaCheck(cudaMemsetAsync(data, 0, bytes, stream_), fmt::format("zeroing {} floats of device memory", n)));
  return block;
}

Status DeviceMemory::upload(std::span<const float> host, std::span<float> to) const {
  POSEIDON_RETURN_IF_ERROR(checkSameSize("an upload", host.size(), to.size()));
  return cudaCheck(cudaMemcpyAsync(to.data(), host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream_),
                   fmt::format("uploading {} floats", host.size()));
}

Status DeviceMemory::copy(std::span<const float> from, std::span<float> to) const {
  POSEIDON_RETURN_IF_ERROR(checkSameSize("a copy", from.size(), to.size()));
  return cudaCheck(cudaMemcpyAsync(to.data(), from.data(), from.size_bytes(), cudaMemcpyDeviceToDevice, stream_),
                   fmt::format("copying {} floats on the device", from.size()));
}

Status DeviceMemory::download(std::span<const float> from, std::span<float> host) const {
  POSEIDON_RETURN_IF_ERROR(checkSameSize("a download", from.size(), host.size()));
  POSEIDON_RETURN_IF_ERROR(
      cudaCheck(cudaMemcpyAsync(host.data(), from.data(), from.size_bytes(), cudaMemcpyDeviceToHost, stream_),
                fmt::format("downloading {} floats", from.size())));
  return cudaCheck(cudaStreamSynchronize(stream_), "waiting for a download");
}

Result<DeviceBytes> DeviceBytes::allocate(size_t bytes, const std::string& what) {
  void* data = nullptr;
  POSEIDON_RETURN_IF_ERROR(
      cudaCheck(cudaMalloc(&data, bytes == 0 ? 1 : bytes), fmt::format("cudaMalloc of {} bytes for {}", bytes, what)));
  return DeviceBytes(data);
}

DeviceBytes::~DeviceBytes() {
  if (data_ != nullptr) static_cast<void>(cudaFree(data_));
}

}  // namespace poseidon::trainer::reference
