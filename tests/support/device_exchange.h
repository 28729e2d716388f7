// Test support: the exchanges through device memory every backend must get right, whether it
// reaches the memory directly (dma-buf) or through host staging: two-sided messages between
// device regions (also mixed with host slices), one-sided writes into and out of device memory,
// with the immediate arriving only once the data is on the device. Each checks with gtest
// assertions; `mesh` has at least two connected ranks, `device` makes their device memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tests/support/device_buffers.h"
#include "tests/support/mesh.h"

namespace poseidon::testing {

// A registered device buffer filled with the pattern of `seed` (mesh.h).
struct DeviceBuffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  std::unique_ptr<transport::MemoryRegion> region;
};
DeviceBuffer makeDeviceBuffer(transport::Context& context, DeviceBuffers& device, size_t size, uint8_t seed);
// The buffer's bytes, read back from the device.
std::vector<uint8_t> readBack(DeviceBuffers& device, const DeviceBuffer& buffer);

void sendRecvDeviceToDevice(Mesh& mesh, DeviceBuffers& device);
void sendvMixedHostAndDeviceSlices(Mesh& mesh, DeviceBuffers& device);
void writesIntoDeviceMemoryInOrder(Mesh& mesh, DeviceBuffers& device);
void writeFromDeviceMemory(Mesh& mesh, DeviceBuffers& device);

}  // namespace poseidon::testing
