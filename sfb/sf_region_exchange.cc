#include "sfb/sf_region_exchange.h"

#include <fmt/format.h>

#include "transport/bootstrap/region_exchange.h"

namespace poseidon::sfb {
namespace {

transport::bootstrap::RegionExchange exchange(transport::bootstrap::Store& store, std::string_view context_name) {
  return {transport::bootstrap::StoreView(store, std::string(context_name)).child("sfb"),
          {"SFB receive buffer", "rank", "SFB layers and worker count"}};
}

}  // namespace

std::string sfRegionKey(transport::bootstrap::Store& store, std::string_view context_name, int rank) {
  return exchange(store, context_name).key(rank);
}

Status publishSfRegion(transport::bootstrap::Store& store, std::string_view context_name, int rank,
                       const SfSlotLayout& layout, const transport::MemoryRegion& receive) {
  const transport::RemoteDescriptor descriptor = receive.remote();
  return exchange(store, context_name).publish(rank, layout.fingerprint(), {&descriptor, 1});
}

Result<std::vector<transport::RemoteDescriptor>> fetchSfRegions(transport::bootstrap::Store& store,
                                                                std::string_view context_name, int rank,
                                                                const SfSlotLayout& layout, Deadline deadline) {
  std::vector<int> peers;
  for (int peer = 0; peer < layout.workers(); ++peer) {
    if (peer != rank) peers.push_back(peer);
  }
  const transport::bootstrap::RegionNeeds needs{layout.fingerprint(),
                                                {uint64_t{layout.receiveFloats()} * sizeof(float)}};
  auto published = exchange(store, context_name)
                       .fetchAll(
                           peers, [&](int) { return needs; }, deadline);
  if (!published) return published.status();
  std::vector<transport::RemoteDescriptor> regions(static_cast<size_t>(layout.workers()));
  for (size_t i = 0; i < peers.size(); ++i) regions[static_cast<size_t>(peers[i])] = (*published)[i].descriptors[0];
  return regions;
}

}  // namespace poseidon::sfb
