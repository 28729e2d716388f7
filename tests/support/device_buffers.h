// Test support: device memory as a test handles it — allocate, fill from the host, read back.
// FakeDeviceMemory (no GPU needed) and the GPU suite's CUDA allocator both provide it, so the
// same exchanges (device_exchange.h) run on both.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poseidon::testing {

class DeviceBuffers {
 public:
  virtual ~DeviceBuffers() = default;
  // `length` bytes of device memory, freed with this object.
  virtual uint8_t* allocate(size_t length) = 0;
  virtual void upload(uint8_t* device, const uint8_t* host, size_t length) = 0;
  virtual void download(uint8_t* host, const uint8_t* device, size_t length) = 0;
};

}  // namespace poseidon::testing
