#include "sfb/sf_region_exchange.h"

#include <fmt/format.h>

#include "transport/wire/little_endian.h"

namespace poseidon::sfb {

using transport::RemoteDescriptor;

namespace {
// The descriptor, then the layout fingerprint (little-endian).
constexpr size_t kValueBytes = RemoteDescriptor::kEncodedSize + 4;
}  // namespace

std::string sfRegionKey(std::string_view context_name, int rank) {
  return fmt::format("{}/sfb/{}/slots", context_name, rank);
}

Status publishSfRegion(transport::bootstrap::Store& store, std::string_view context_name, int rank,
                                  const SfSlotLayout& layout, const transport::MemoryRegion& receive) {
  const auto descriptor = receive.remote().serialize();
  std::vector<uint8_t> value(descriptor.begin(), descriptor.end());
  value.resize(kValueBytes);
  transport::wire::storeLe32(value.data() + RemoteDescriptor::kEncodedSize, layout.fingerprint());
  return store.set(sfRegionKey(context_name, rank), value);
}

Result<std::vector<RemoteDescriptor>> fetchSfRegions(transport::bootstrap::Store& store, std::string_view context_name,
                                                    int rank, const SfSlotLayout& layout,
                                                    Deadline deadline) {
  std::vector<RemoteDescriptor> regions(static_cast<size_t>(layout.workers()));
  const uint64_t needed = uint64_t{layout.receiveFloats()} * sizeof(float);
  for (int peer = 0; peer < layout.workers(); ++peer) {
    if (peer == rank) continue;
    const std::string key = sfRegionKey(context_name, peer);
    auto value = store.get(key, deadline);
    if (!value) return value.status().withContext(fmt::format("SFB receive buffer of rank {}", peer));
    if (value->size() != kValueBytes) {
      return makeStatus(StatusCode::kProtocolError,
                                   "store key {} of rank {} holds {} bytes; expected {} (descriptor and fingerprint)",
                                   key, peer, value->size(), kValueBytes);
    }
    auto descriptor = RemoteDescriptor::parse(std::span<const uint8_t>(value->data(), RemoteDescriptor::kEncodedSize));
    if (!descriptor) return descriptor.status().withContext(fmt::format("store key {} of rank {}", key, peer));
    const uint32_t fingerprint = transport::wire::loadLe32(value->data() + RemoteDescriptor::kEncodedSize);
    if (fingerprint != layout.fingerprint()) {
      return makeStatus(StatusCode::kInvalidArgument,
                                   "rank {} was given other SFB layers or worker count than rank {} (layout "
                                   "fingerprint {:#010x}, expected {:#010x})",
                                   peer, rank, fingerprint, layout.fingerprint());
    }
    if (descriptor->length < needed) {
      return makeStatus(StatusCode::kProtocolError,
                                   "rank {} published an SFB receive buffer of {} bytes; the layout needs {}", peer,
                                   descriptor->length, needed);
    }
    regions[static_cast<size_t>(peer)] = *descriptor;
  }
  return regions;
}

}  // namespace poseidon::sfb
