#include "tools/perf/buffers.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace poseidon::perf {

uint64_t slotCount(uint64_t size) {
  return std::clamp<uint64_t>(kRingBytes / std::max<uint64_t>(size, 1), 1, kMaxSlots);
}

uint64_t dataRegionBytes(const RunParameters& params) {
  if (!isBandwidth(params.test)) return 2 * params.maxSize();
  uint64_t bytes = 0;
  for (uint64_t size : params.sizes) bytes = std::max(bytes, slotCount(size) * size);
  return bytes;
}

Result<std::unique_ptr<RegisteredBuffer>> RegisteredBuffer::create(transport::Context& context, size_t bytes) {
  const size_t length = std::max<size_t>(bytes, 1);
  void* memory = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    return errnoStatus(StatusCode::kIoError, fmt::format("allocating {} bytes", length));
  }
  std::unique_ptr<RegisteredBuffer> buffer(new RegisteredBuffer(static_cast<uint8_t*>(memory), length));
  // Fault every page in now, not in the timed loop; a non-zero pattern is what gets sent.
  std::memset(buffer->data_, 0xA5, length);
  auto region = context.registerMemory(buffer->data_, length);
  if (!region) return region.status();
  buffer->region_ = std::move(*region);
  return buffer;
}

RegisteredBuffer::~RegisteredBuffer() {
  region_.reset();
  ::munmap(data_, size_);
}

}  // namespace poseidon::perf
