#include "trainer/sync/replica_check.h"

#include <fmt/format.h>

#include <vector>

#include "transport/bootstrap/store_view.h"
#include "transport/wire/crc32c.h"
#include "transport/wire/little_endian.h"

namespace poseidon::trainer {

namespace {

// CRC32C, then the length in floats (little-endian).
constexpr size_t kValueBytes = 4 + 8;

struct ReplicaHash {
  uint32_t crc = 0;
  uint64_t floats = 0;
  bool operator==(const ReplicaHash&) const = default;
};

// "<scope>/replica/<iteration>": one view per check, each rank's hash under its rank.
transport::bootstrap::StoreView hashesOf(transport::bootstrap::Store& store, std::string_view scope,
                                         uint64_t iteration) {
  return transport::bootstrap::StoreView(store, std::string(scope)).child("replica").child(std::to_string(iteration));
}

std::string describe(int rank, const ReplicaHash& hash) {
  return fmt::format("rank {} (crc32c {:#010x} over {} floats)", rank, hash.crc, hash.floats);
}

}  // namespace

std::string replicaKey(transport::bootstrap::Store& store, std::string_view scope, uint64_t iteration, int rank) {
  return hashesOf(store, scope, iteration).key(std::to_string(rank));
}

Status checkReplicas(transport::bootstrap::Store& store, std::string_view scope, int rank, int size, uint64_t iteration,
                     std::span<const float> params, Deadline deadline) {
  if (size < 1 || rank < 0 || rank >= size) {
    return makeStatus(StatusCode::kInvalidArgument, "replica check of '{}': rank {} of {} ranks", scope, rank, size);
  }
  const ReplicaHash own{transport::wire::crc32c(params.data(), params.size_bytes()), params.size()};
  std::vector<uint8_t> value(kValueBytes);
  transport::wire::storeLe32(value.data(), own.crc);
  transport::wire::storeLe64(value.data() + 4, own.floats);
  transport::bootstrap::StoreView hashes_of = hashesOf(store, scope, iteration);
  POSEIDON_RETURN_IF_ERROR(hashes_of.set(std::to_string(rank), value));

  const auto context = [&] { return fmt::format("replica check of '{}' at iteration {}", scope, iteration); };
  std::vector<ReplicaHash> hashes(static_cast<size_t>(size));
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) {
      hashes[static_cast<size_t>(peer)] = own;
      continue;
    }
    auto got = hashes_of.get(std::to_string(peer), deadline);
    if (!got) return got.status().withContext(fmt::format("{}: hash of rank {}", context(), peer));
    if (got->size() != kValueBytes) {
      return makeStatus(StatusCode::kProtocolError, "{}: rank {} published {} bytes; expected {}", context(), peer,
                        got->size(), kValueBytes);
    }
    hashes[static_cast<size_t>(peer)] = {transport::wire::loadLe32(got->data()),
                                         transport::wire::loadLe64(got->data() + 4)};
  }
  std::string differing;
  for (int peer = 1; peer < size; ++peer) {
    if (hashes[static_cast<size_t>(peer)] == hashes[0]) continue;
    if (!differing.empty()) differing += ", ";
    differing += describe(peer, hashes[static_cast<size_t>(peer)]);
  }
  if (differing.empty()) return Status::ok();
  return makeStatus(StatusCode::kInternal, "{}: replicas differ from {}: {}", context(), describe(0, hashes[0]),
                    differing);
}

}  // namespace poseidon::trainer
