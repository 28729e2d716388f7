#include "tests/support/fake_device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace poseidon::testing {

FakeDeviceMemory::~FakeDeviceMemory() {
  for (const auto& [start, length] : allocations_) ::munmap(reinterpret_cast<void*>(start), length);
}

uint8_t* FakeDeviceMemory::allocate(size_t length) {
  const size_t mapped = length == 0 ? 1 : length;
  void* p = ::mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap of fake device memory failed");
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_[reinterpret_cast<uintptr_t>(p)] = mapped;
  return static_cast<uint8_t*>(p);
}

void FakeDeviceMemory::copyUnprotected(void* to, const void* from, size_t length, const void* device) {
  if (length == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto address = reinterpret_cast<uintptr_t>(device);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) throw std::logic_error("fake device copy outside every allocation");
  --it;
  void* start = reinterpret_cast<void*>(it->first);
  ::mprotect(start, it->second, PROT_READ | PROT_WRITE);
  std::memcpy(to, from, length);
  ::mprotect(start, it->second, PROT_NONE);
}

void FakeDeviceMemory::upload(uint8_t* device, const uint8_t* host, size_t length) {
  copyUnprotected(device, host, length, device);
}

void FakeDeviceMemory::download(uint8_t* host, const uint8_t* device, size_t length) {
  copyUnprotected(host, device, length, device);
}

void FakeDeviceMemory::failCopies(std::optional<std::string> cause) {
  std::lock_guard<std::mutex> lock(mutex_);
  failure_ = std::move(cause);
}

std::optional<Status> FakeDeviceMemory::injectedFailure(const void* device, size_t length) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_) return std::nullopt;
  return makeStatus(StatusCode::kIoError, "fake copy of {} bytes at {} failed: {}", length, device, *failure_);
}

Result<bool> FakeDeviceMemory::isDeviceMemory(const void* data, size_t length) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto address = reinterpret_cast<uintptr_t>(data);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return false;
  --it;
  if (address >= it->first + it->second) return false;
  if (length > it->first + it->second - address) {
    return makeStatus(StatusCode::kInvalidArgument, "{} bytes at {} run past the fake device allocation", length, data);
  }
  return true;
}

Result<void*> FakeDeviceMemory::allocatePinnedHost(size_t length) {
  void* p = std::aligned_alloc(4096, (length + 4095) / 4096 * 4096);
  if (p == nullptr) return makeStatus(StatusCode::kIoError, "fake pinned allocation of {} bytes", length);
  return p;
}

void FakeDeviceMemory::freePinnedHost(void* host) { std::free(host); }

Status FakeDeviceMemory::copyToHost(void* host, const void* device, size_t length) {
  if (auto failed = injectedFailure(device, length)) return *failed;
  copyUnprotected(host, device, length, device);
  to_host_ += length;
  return Status::ok();
}

Status FakeDeviceMemory::copyToDevice(void* device, const void* host, size_t length) {
  if (auto failed = injectedFailure(device, length)) return *failed;
  copyUnprotected(device, host, length, device);
  to_device_ += length;
  return Status::ok();
}

Result<transport::DmabufRange> FakeDeviceMemory::exportDmabuf(const void* data, size_t length) {
  ++dmabuf_exports_;
  if (offer_dmabuf_) {
    transport::Fd fd(::memfd_create("fake-dmabuf", MFD_CLOEXEC));
    if (!fd.valid()) return errnoStatus(StatusCode::kIoError, "memfd_create for a fake dma-buf");
    return transport::DmabufRange{std::move(fd), 0};
  }
  return makeStatus(StatusCode::kUnavailable, "the fake device memory at {} ({} bytes) has no dma-buf", data, length);
}

}  // namespace poseidon::testing
