#include "ring/ring_setup.h"

#include <fmt/format.h>

#include <span>
#include <string_view>

#include "transport/bootstrap/region_exchange.h"
#include "transport/wire/crc32c.h"

namespace poseidon::ring {

namespace bootstrap = transport::bootstrap;

namespace {

// "<ring name>/<context name>/rank/<r>".
bootstrap::RegionExchange exchange(const RingRendezvous& where) {
  return {bootstrap::StoreView(where.store, where.ring_name).child(where.context_name).child("rank"),
          {"ring buffer and staging", "rank", "ring shape (rank count, piece size, staging slots and layers)"}};
}

std::string encodedItems(const RingSetup& setup) { return setup.items().encode(); }

uint32_t fingerprintOf(std::string_view encoded) { return transport::wire::crc32c(encoded.data(), encoded.size()); }

std::string rankLabel(int rank) { return fmt::format("rank {}", rank); }

}  // namespace

std::vector<PublishedLayer> publishedLayers(const std::vector<model::Layer>& layers) {
  std::vector<PublishedLayer> published;
  for (const model::Layer& layer : layers) published.push_back({layer.name(), layer.denseFloats()});
  return published;
}

model::Fingerprint RingSetup::items() const {
  model::Fingerprint items;
  items.add("ranks", std::to_string(ranks));
  items.add("piece_bytes", std::to_string(piece_bytes));
  items.add("staging_slots", std::to_string(staging_slots));
  for (size_t i = 0; i < layers.size(); ++i) {
    items.add(fmt::format("layer {}", i), fmt::format("'{}' of {} floats", layers[i].name, layers[i].floats));
  }
  return items;
}

uint64_t RingSetup::bufferBytes() const {
  uint64_t floats = 0;
  for (const PublishedLayer& layer : layers) floats += layer.floats;
  return floats * sizeof(float);
}

uint64_t RingSetup::stagingBytes() const { return piece_bytes * staging_slots; }

Status publishRingSetup(const RingRendezvous& where, int rank, const RingSetup& setup, const RingRegions& regions) {
  const std::string items = encodedItems(setup);
  const transport::RemoteDescriptor descriptors[] = {regions.buffer, regions.staging};
  const auto* bytes = reinterpret_cast<const uint8_t*>(items.data());
  return exchange(where).publish(rank, fingerprintOf(items), descriptors,
                                 std::span<const uint8_t>(bytes, items.size()));
}

Result<RingRegions> fetchRingSetup(const RingRendezvous& where, int rank, const RingSetup& mine, int peer_rank,
                                   const std::string& peer, const char* role, Deadline deadline) {
  const model::Fingerprint my_items = mine.items();
  bootstrap::RegionNeeds needs{fingerprintOf(my_items.encode()), {mine.bufferBytes(), mine.stagingBytes()}};
  needs.explain_mismatch = [&](std::span<const uint8_t> extra) -> Status {
    auto theirs =
        model::Fingerprint::decode(std::string_view(reinterpret_cast<const char*>(extra.data()), extra.size()));
    if (!theirs) return theirs.status().withContext("its ring items");
    auto difference = model::firstDifference(my_items, rankLabel(rank), *theirs, rankLabel(peer_rank));
    if (!difference) return Status::ok();
    return makeStatus(StatusCode::kInvalidArgument, "{}", *difference);
  };
  auto published = exchange(where).fetch(peer_rank, needs, deadline);
  if (!published) return published.status().withContext(fmt::format("the ring set-up of our {} {}", role, peer));
  return RingRegions{published->descriptors[0], published->descriptors[1]};
}

}  // namespace poseidon::ring
