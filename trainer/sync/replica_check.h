// checkReplicas: that the replicas of a model (or of one layer) are still bit-identical.
//
// SFB peers each apply the update themselves; only identical inputs and an identical order keep
// their parameters identical, and a silent divergence (a factor applied twice, a different
// kernel, a lost write) would only show as worse training much later. Every N iterations in debug
// builds, and in tests, each rank hashes its parameters' bytes, publishes the hash in the store
// and compares every rank's with rank 0's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "transport/bootstrap/store.h"

namespace poseidon::trainer {

// "<scope>/replica/<iteration>/<rank>": where `rank` publishes its hash (write-once: one key per
// check, so a scope is checked at most once per iteration).
std::string replicaKey(transport::bootstrap::Store& store, std::string_view scope, uint64_t iteration, int rank);

// Every rank of `size` calls it with the same scope and iteration. Publishes CRC32C and length of
// `params`' bytes, waits for every rank's, and fails (kInternal) naming the iteration and the
// ranks whose hash or length differs from rank 0's. A rank that never publishes makes it time out
// naming that rank; a malformed value is a protocol error naming its rank.
Status checkReplicas(transport::bootstrap::Store& store, std::string_view scope, int rank, int size, uint64_t iteration,
                     std::span<const float> params, Deadline deadline);

}  // namespace poseidon::trainer
