#include "transport/memory.h"

#include "transport/wire/little_endian.h"

namespace poseidon::transport {
namespace {
constexpr uint32_t kDescriptorMagic = 0x44525350;  // "PSRD"
constexpr uint8_t kDescriptorVersion = 1;
}  // namespace

const char* backendName(BackendTag tag) {
  switch (tag) {
    case BackendTag::kTcp: return "tcp";
    case BackendTag::kVerbs: return "verbs";
  }
  return "unknown";
}

// Layout: u32 magic, u8 version, u8 backend, u16 reserved, u32 key, u32 reserved,
//         u64 address, u64 length.
std::array<uint8_t, RemoteDescriptor::kEncodedSize> RemoteDescriptor::serialize() const {
  std::array<uint8_t, kEncodedSize> out{};
  wire::storeLe32(&out[0], kDescriptorMagic);
  out[4] = kDescriptorVersion;
  out[5] = static_cast<uint8_t>(backend);
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
  RemoteDescriptor d;
  d.backend = static_cast<BackendTag>(backend);
  d.key = wire::loadLe32(&bytes[8]);
  d.address = wire::loadLe64(&bytes[16]);
  d.length = wire::loadLe64(&bytes[24]);
  return d;
}

}  // namespace poseidon::transport
