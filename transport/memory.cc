#include "transport/memory.h"

#include "transport/common/host_staging.h"
#include "transport/wire/little_endian.h"

namespace poseidon::transport {
namespace {
constexpr uint32_t kDescriptorMagic = 0x44525350;  // "PSRD"
constexpr uint8_t kDescriptorVersion = 1;
constexpr uint8_t kFlagStaged = 0x01;  // byte 6: flags (was reserved, zero, before staging)
}  // namespace

MemoryRegion::MemoryRegion(void* data, size_t size) : MemoryRegion(data, size, nullptr) {}

MemoryRegion::MemoryRegion(void* data, size_t size, std::unique_ptr<HostStaging> staging)
    : data_(static_cast<uint8_t*>(data)),
      size_(size),
      staging_(std::move(staging)),
      wire_(staging_ ? staging_->host() : data_) {}

// Out of line: HostStaging is complete only here. Derived regions deregister first, so the
// staging memory outlives the registration of it.
MemoryRegion::~MemoryRegion() = default;

Status MemoryRegion::stageOut(uint64_t offset, uint64_t length) const {
  return staging_ ? staging_->toHost(offset, length) : Status::ok();
}

Status MemoryRegion::stageIn(uint64_t offset, uint64_t length) const {
  return staging_ ? staging_->toDevice(offset, length) : Status::ok();
}

const char* backendName(BackendTag tag) {
  switch (tag) {
    case BackendTag::kTcp: return "tcp";
    case BackendTag::kVerbs: return "verbs";
  }
  return "unknown";
}

// Layout: u32 magic, u8 version, u8 backend, u8 flags, u8 reserved, u32 key, u32 reserved,
//         u64 address, u64 length.
std::array<uint8_t, RemoteDescriptor::kEncodedSize> RemoteDescriptor::serialize() const {
  std::array<uint8_t, kEncodedSize> out{};
  wire::storeLe32(&out[0], kDescriptorMagic);
  out[4] = kDescriptorVersion;
  out[5] = static_cast<uint8_t>(backend);
  out[6] = staged ? kFlagStaged : 0;
  wire::storeLe32(&out[8], key);
  wire::storeLe64(&out[16], address);
  wire::storeLe64(&out[24], length);
  return out;
}

Result<RemoteDescriptor> RemoteDescriptor::parse(std::span<const uint8_t> bytes) {
  if (bytes.size() != kEncodedSize) {
    return makeStatus(StatusCode::kInvalidArgument, "remote descriptor of {} bytes, expected {}", bytes.size(),
                      kEncodedSize);
  }
  const uint32_t magic = wire::loadLe32(&bytes[0]);
  if (magic != kDescriptorMagic) {
    return makeStatus(StatusCode::kInvalidArgument, "remote descriptor magic 0x{:08x} is not 0x{:08x}", magic,
                      kDescriptorMagic);
  }
  if (bytes[4] != kDescriptorVersion) {
    return makeStatus(StatusCode::kInvalidArgument, "remote descriptor version {} is not {}", bytes[4],
                      kDescriptorVersion);
  }
  const uint8_t backend = bytes[5];
  if (backend != static_cast<uint8_t>(BackendTag::kTcp) && backend != static_cast<uint8_t>(BackendTag::kVerbs)) {
    return makeStatus(StatusCode::kInvalidArgument, "remote descriptor backend {} is not 1 (tcp) or 2 (verbs)",
                      backend);
  }
  const uint8_t flags = bytes[6];
  if ((flags & ~kFlagStaged) != 0) {
    return makeStatus(StatusCode::kInvalidArgument, "remote descriptor flags 0x{:02x} has bits other than 0x{:02x}",
                      flags, kFlagStaged);
  }
  RemoteDescriptor d;
  d.backend = static_cast<BackendTag>(backend);
  d.staged = (flags & kFlagStaged) != 0;
  d.key = wire::loadLe32(&bytes[8]);
  d.address = wire::loadLe64(&bytes[16]);
  d.length = wire::loadLe64(&bytes[24]);
  return d;
}

}  // namespace poseidon::transport
