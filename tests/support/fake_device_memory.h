// Test support: a stand-in for GPU memory on machines without one, given to the transport as
// DeviceOptions::device_memory so the host-staging paths run everywhere.
//
// Its "device" allocations are host pages the process may not touch (PROT_NONE) except inside
// the fake's own copies: a backend that reads or writes a device pointer directly, instead of
// its staging copy, crashes the test rather than passing by luck. It exports no dma-buf, so
// verbs stages too, unless told to offer one: then it hands out a file descriptor that is no
// dma-buf (a memfd), which every RDMA driver refuses, to run verbs' attempt and its fallback.
// Copies can be made to fail, for the error paths.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "tests/support/device_buffers.h"
#include "transport/device_memory.h"

namespace poseidon::testing {

class FakeDeviceMemory final : public transport::DeviceMemory, public DeviceBuffers {
 public:
  FakeDeviceMemory() = default;
  ~FakeDeviceMemory() override;

  // DeviceBuffers
  uint8_t* allocate(size_t length) override;
  void upload(uint8_t* device, const uint8_t* host, size_t length) override;
  void download(uint8_t* host, const uint8_t* device, size_t length) override;

  // Bytes the transport copied each way (the test's own uploads and downloads not counted).
  uint64_t bytesToHost() const { return to_host_.load(); }
  uint64_t bytesToDevice() const { return to_device_.load(); }
  // From now on the transport's copies fail with this cause (nullopt: they work again).
  void failCopies(std::optional<std::string> cause);
  // exportDmabuf hands out a memfd instead of refusing; counts the calls either way.
  void offerDmabuf(bool offer) { offer_dmabuf_ = offer; }
  int dmabufExports() const { return dmabuf_exports_.load(); }

  // transport::DeviceMemory
  const char* name() const override { return "fake"; }
  Result<bool> isDeviceMemory(const void* data, size_t length) override;
  Result<void*> allocatePinnedHost(size_t length) override;
  void freePinnedHost(void* host) override;
  Status copyToHost(void* host, const void* device, size_t length) override;
  Status copyToDevice(void* device, const void* host, size_t length) override;
  Result<transport::DmabufRange> exportDmabuf(const void* data, size_t length) override;

 private:
  // memcpy with the device allocation holding `device` readable and writable meanwhile.
  void copyUnprotected(void* to, const void* from, size_t length, const void* device);
  std::optional<Status> injectedFailure(const void* device, size_t length);

  std::mutex mutex_;
  std::map<uintptr_t, size_t> allocations_;  // start -> mapped length
  std::optional<std::string> failure_;
  std::atomic<uint64_t> to_host_{0};
  std::atomic<uint64_t> to_device_{0};
  std::atomic<bool> offer_dmabuf_{false};
  std::atomic<int> dmabuf_exports_{0};
};

}  // namespace poseidon::testing
