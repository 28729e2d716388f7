// Start-up agreement: every rank of a job compares what it built with what every other rank
// built before the first byte of training moves.
//
// Ranks started with different models, layouts or settings would otherwise exchange buffers
// that do not line up and train silently wrong parameters, or hang in a protocol step one side
// never takes. Each rank publishes its fingerprint (model/fingerprint.h: the model's tensors and
// layer kinds, and whatever the caller appends: chunk layout, P1 / P2, optimizer, consistency)
// and compares it with every other rank's, so every rank of a mismatched job fails within the
// deadline, with an error naming both ranks and the first differing item:
//   "PS job 'x': worker 1 (rank 1) and worker 0 (rank 0) were not started alike: rank 1 has
//    fc3.weight = 170 floats, rank 0 has 160 floats"
//
// Keys, below the given store: "<group>/<rank>/crc" (CRC32C of the encoded list, read first) and
// "<group>/<rank>/items" (the list, read only to describe a difference).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "model/fingerprint.h"
#include "transport/bootstrap/store.h"

namespace poseidon::scheme {

struct AgreementGroup {
  std::string name;        // the key prefix and how messages name the group: "PS job 'x'"
  std::vector<int> ranks;  // who takes part, this rank included
  // How messages name a rank ("worker 1 (rank 1)"); "rank <r>" when not set.
  std::function<std::string(int)> describe;
};

// Publishes `mine` for `rank` and compares it with every other rank of the group. kInvalidArgument
// naming the ranks and the first difference; a rank that publishes nothing by the deadline fails
// with the store's timeout naming its key; a malformed value with kProtocolError naming the rank.
Status agreeOnStart(transport::bootstrap::Store& store, const AgreementGroup& group, int rank,
                    const model::Fingerprint& mine, Deadline deadline);

// For a rank outside the group that depends on it (a worker on its servers' optimizer): reads
// every member's published fingerprint and fails as agreeOnStart() would, comparing each with
// the first member's, so the mismatch is named on this rank too rather than surfacing later as
// a lost peer.
Status observeAgreement(transport::bootstrap::Store& store, const AgreementGroup& group, Deadline deadline);

}  // namespace poseidon::scheme
