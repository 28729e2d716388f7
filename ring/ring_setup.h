// RingSetup: what every rank of one ring all-reduce must have been started with, and the
// exchange of each rank's buffer and staging through the bootstrap store
// (transport/bootstrap/region_exchange.h).
//
// A rank needs its successor's buffer and staging (it writes pieces there) and its predecessor's
// staging (a credit is a zero-length write into it). Both neighbours must have cut the same
// layers with the same piece size and slot count, or the pieces would not line up; comparing
// with both neighbours checks every rank, link by link round the ring.
//
// Each rank publishes its two descriptors under "<ring name>/<context name>/rank/<r>" with the
// ring's shape (RingSetup::items(), a model::Fingerprint) as the extra bytes and their CRC32C as
// the fingerprint, so a neighbour set up otherwise is caught by the exchange's fingerprint check
// and named item by item ("rank 1 has layer 0 = 'fc' of 101 floats, rank 0 has 'fc' of 100
// floats").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "model/fingerprint.h"
#include "model/layer.h"
#include "transport/bootstrap/store.h"
#include "transport/memory.h"

namespace poseidon::ring {

// A longer layer name is refused at start: it keeps what a rank publishes small.
inline constexpr uint64_t kMaxRingLayerNameBytes = 4096;

// What a rank publishes of each layer: its name and the floats its buffer holds
// (Layer::denseFloats()), so a neighbour given another model is caught at start.
struct PublishedLayer {
  std::string name;
  uint64_t floats = 0;

  bool operator==(const PublishedLayer&) const = default;
};
std::vector<PublishedLayer> publishedLayers(const std::vector<model::Layer>& layers);

struct RingSetup {
  int ranks = 0;
  uint64_t piece_bytes = 0;
  uint64_t staging_slots = 0;
  std::vector<PublishedLayer> layers;

  // One item per field and per layer ("layer 0" = "'fc' of 100 floats"), in that order.
  model::Fingerprint items() const;
  // The least a neighbour's regions must hold: every layer's floats, and the staging's pieces.
  uint64_t bufferBytes() const;
  uint64_t stagingBytes() const;
};

// A rank's registered memory, as its neighbours write into it.
struct RingRegions {
  transport::RemoteDescriptor buffer;
  transport::RemoteDescriptor staging;
};

// Where the rendezvous of one ring happens: the ring's name (unique per RingAllreduce within a
// job: keys are write-once) and the context's.
struct RingRendezvous {
  transport::bootstrap::Store& store;
  std::string ring_name;
  std::string context_name;
};

Status publishRingSetup(const RingRendezvous& where, int rank, const RingSetup& setup, const RingRegions& regions);

// The regions `peer_rank` published, checked against `mine`: OK when it was set up the same way
// and its regions are large enough. Otherwise fails naming `peer` (e.g. "rank 2 (127.0.0.1:4000)"),
// our `role` (e.g. "successor") and the store key: kInvalidArgument with the first difference,
// kProtocolError for a value it cannot read or too small a region, kTimeout when nothing was
// published by the deadline.
Result<RingRegions> fetchRingSetup(const RingRendezvous& where, int rank, const RingSetup& mine, int peer_rank,
                                   const std::string& peer, const char* role, Deadline deadline);

}  // namespace poseidon::ring
