// The CUDA runtime as DeviceMemory (transport/device_memory.h); built only with CUDA.
#pragma once

#include <memory>

#include "transport/device_memory.h"

namespace poseidon::transport::cuda {

std::shared_ptr<DeviceMemory> cudaDeviceMemory();

}  // namespace poseidon::transport::cuda
