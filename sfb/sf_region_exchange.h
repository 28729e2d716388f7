// How SFB workers learn each other's receive buffers: each publishes the remote descriptor of its
// registered receive buffer in the bootstrap store, with its layout's fingerprint, and fetches
// every peer's. Keys live under the context's name, so several groups can share one store.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sfb/sf_slots.h"
#include "transport/bootstrap/store.h"
#include "transport/memory.h"

namespace poseidon::sfb {

// Where `rank` publishes its receive buffer: "<context name>/sfb/<rank>" (the one region exchange
// of transport/bootstrap/region_exchange.h, which also checks fingerprints and sizes).
std::string sfRegionKey(transport::bootstrap::Store& store, std::string_view context_name, int rank);

Status publishSfRegion(transport::bootstrap::Store& store, std::string_view context_name, int rank,
                       const SfSlotLayout& layout, const transport::MemoryRegion& receive);

// Every peer's receive buffer, indexed by rank (the entry of `rank` itself is left default).
// Fails naming the peer whose value is malformed, whose layers differ from ours (fingerprint), or
// whose buffer is smaller than the layout needs; a timeout names the key still missing.
Result<std::vector<transport::RemoteDescriptor>> fetchSfRegions(transport::bootstrap::Store& store,
                                                                std::string_view context_name, int rank,
                                                                const SfSlotLayout& layout, Deadline deadline);

}  // namespace poseidon::sfb
