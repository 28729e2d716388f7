// RingSetup: what each rank of a ring all-reduce publishes in the bootstrap store, and the check
// that a neighbour set up the same ring.
//
// A rank needs its successor's buffer and staging (it writes pieces there) and its predecessor's
// staging (a credit is a zero-length write into it). Both neighbours must have cut the same
// layers with the same piece size and slot count, or the pieces would not line up; comparing
// with both neighbours checks every rank, link by link round the ring.
//
// Encoding (little-endian): magic "RNG1", ranks u32, rank u32, data and staging remote
// descriptors (32 bytes each), piece_bytes u64, staging_slots u64, layer count u64, then per
// layer floats u64, name length u32 and the name's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ring/ring_allreduce.h"
#include "transport/bootstrap/store.h"
#include "transport/memory.h"

namespace poseidon::ring {

// A longer layer name is refused at start, and by a parser rather than trusted as a length.
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
  int rank = 0;
  transport::RemoteDescriptor data;
  transport::RemoteDescriptor staging;
  uint64_t piece_bytes = 0;
  uint64_t staging_slots = 0;
  std::vector<PublishedLayer> layers;

  std::vector<uint8_t> serialize() const;
  // Checks every length against the bytes present before reading; names `key` and what is wrong.
  static Result<RingSetup> parse(const std::string& key, const std::vector<uint8_t>& bytes);
};

std::string ringSetupKey(const std::string& name, const std::string& context_name, int rank);

// OK when `theirs` (published by `peer`, e.g. "rank 2 (127.0.0.1:4000)", our `role`, e.g.
// "successor") describes the same ring as `mine` and regions large enough for it; otherwise
// kInvalidArgument naming the first difference.
Status checkSameRing(const RingSetup& mine, const RingSetup& theirs, int expected_rank, const std::string& peer,
                     const char* role);

}  // namespace poseidon::ring
